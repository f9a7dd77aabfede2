"""Section serving_kv_cache-fitting: a 7B model with GQA (28 layers, 8 KV heads of 128, FP16) at 131,072 tokens,
Qwen2.5 7B's 4 KV heads (config.json), and the same shape windowed at Mistral 7B's 4,096 tokens."""
import re

import chapter_outputs

NB = chapter_outputs.notebook("serving_kv_cache")
PER_TOKEN = 2 * 28 * 8 * 128 * 2
N = 131_072


def test_seven_b_at_128k():
    assert PER_TOKEN == 114_688 == 112 * 1024
    assert PER_TOKEN * N == 14 * 2**30 and f"{PER_TOKEN * N / 1e9:.1f}" == "15.0"
    out = chapter_outputs.printed(NB, "cfg_7b_q = mk.AttentionConfig(")
    assert "2 x 28 x 8 x 128 x 2 bytes = 114,688 bytes = 112 KiB a token" in out
    assert "x 131,072 tokens = 14 GiB (15.0 GB); FP8 cache 7 GiB" in out
    assert 2 * 28 * 4 * 128 * 2 * N == 7 * 2**30 and "Qwen2.5 7B (4 KV heads): 7 GiB" in out
    assert PER_TOKEN * 4096 == 448 * 2**20 and "every layer windowed at 4,096: 448 MiB" in out
    assert chapter_outputs.glued(NB, "skv_7b_128k") == "14 GiB (15.0 GB)"
    assert chapter_outputs.glued(NB, "skv_7b_token") == "112 KiB"
    reach = 28 * (4096 - 1)  # L(W - 1): the farthest a token reaches through 28 windowed layers
    assert reach == 114_660 < N and f"28 x 4,095 = {reach:,} < {N:,}: the first {N - reach:,} tokens" in out
    assert chapter_outputs.glued(NB, "skv_7b_reach") == f"{reach:,}"
    assert chapter_outputs.glued(NB, "skv_7b_unreached") == f"{N - reach:,}" == "16,412"
    total = PER_TOKEN * N + 7 * 10**9 * 2
    assert chapter_outputs.glued(NB, "skv_7b_total_128k") == f"{total / 1e9:.1f} GB" == "29.0 GB"


def test_window_answer_links_its_evidence():
    text = chapter_outputs.section(NB, "serving_kv_cache-fitting", end="serving_kv_cache-three-engines")
    for ref in ("beyond_kv_cache-receptive-field", "attention_sinks-deeper-layers", "serving_kv_cache-rolling"):
        assert f"{{ref}}`{ref}`" in text
    labels = chapter_outputs.book_labels()
    assert all(ref in labels for ref in re.findall(r"\{ref\}`([\w.-]+)`", text))
    chapter_outputs.assert_cited_in_list(text, ["qwen25", "mistral7b"])
    assert "{doc}`attention_sinks`" in text and "{cite:p}`mistral7bv02`" in text
    assert "$L(W - 1)$" in text

