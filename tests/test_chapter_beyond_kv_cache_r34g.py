"""Section beyond_kv_cache-needs-training: DeepSeek-V3.2-Exp's continued pre-training token counts (report §2.1:
1,000 steps x 16 sequences and 15,000 steps x 480 sequences of 128K tokens), GQA-8 against MHA on Llama 3 70B
(64 query heads, 8 KV heads), MLA's latent (512 + 64) against DeepSeek-V3's 128 heads of 192 + 128, and which
methods the table marks as needing no training."""
import chapter_outputs

NB = chapter_outputs.notebook("beyond_kv_cache")
SEQ = 128 * 1024


def _rows():
    text = chapter_outputs.printed(NB, "warmup_tokens =")
    return {line[:27].strip(): line[27:].split() for line in text.splitlines()[1:]}


def test_dsa_token_counts():
    warm, sparse = 1_000 * 16 * SEQ, 15_000 * 480 * SEQ
    assert f"{warm / 1e9:.1f}B" == "2.1B" and f"{sparse / 1e9:.1f}B" == "943.7B"  # the report's own figures
    assert chapter_outputs.glued(NB, "bk_nt_warm") == "2.1B"
    assert chapter_outputs.glued(NB, "bk_nt_sparse") == "943.7B"
    assert chapter_outputs.glued(NB, "bk_nt_share") == f"{100 * warm / (warm + sparse):.1f}%"
    assert _rows()["DSA"][:4] == ["continued", "2.1B", "+", "943.7B"]


def test_cache_factors():
    rows = _rows()
    assert rows["GQA-8 / MQA"][-3] == f"{8 / 64:.3g}"
    assert rows["MLA"][-4] == f"{(512 + 64) / (128 * (192 + 128)):.3g}"
    assert rows["DSA"][5] == f"{(2 * 576 + 128 + 4) / (2 * 576):.3g}"
    assert rows["CLA2 / YOCO"][-6] == "0.5"


def test_training_column():
    rows = _rows()
    no_training = {"sinks + window", "paging", "prefix sharing", "offload", "quantize fp8 / KIVI 2-bit",
                   "evict (H2O, SnapKV)"}
    assert {name for name, cols in rows.items() if cols[0] == "no"} == no_training
    assert rows["sliding window (Gemma 3)"][:4] == ["yes,", "to", "be", "exact"]
    for name in ("paging", "prefix sharing"):
        assert rows[name][1] == "exact"
    text = chapter_outputs.section(NB, "beyond_kv_cache-needs-training", end="beyond_kv_cache-minikv")
    assert "deepseekv32{§2.1}" in text and "ainslie2023gqa{Abstract, §2.1}" in text
    assert "is wrong" in text
