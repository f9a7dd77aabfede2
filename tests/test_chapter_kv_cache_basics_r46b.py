"""Section kv_cache_basics-architecture-memory: the number for a 7B model in FP16 (weights, cache per token, and
the tokens a 16 GB or a 24 GB card holds after 14 GB of weights and an assumed 1 GB reserve), recomputed from
Llama 2 7B's shape (32 layers, 32 KV heads of 128) and Mistral 7B's (32 layers, 8 KV heads of 128)."""
import re

import chapter_outputs

NB = chapter_outputs.notebook("kv_cache_basics")
WEIGHTS, RESERVE = 7 * 10**9 * 2, 10**9
PER_TOKEN = {"MHA (Llama 2 7B)": 2 * 32 * 32 * 128 * 2, "GQA-8 (Mistral 7B)": 2 * 32 * 8 * 128 * 2}


def fit(per_token, card_gb):
    return (card_gb * 10**9 - WEIGHTS - RESERVE) // per_token


def test_tokens_per_card():
    out = chapter_outputs.printed(NB, "u46_weights, u46_reserve")
    for name, per_token in PER_TOKEN.items():
        line = next(x for x in out.splitlines() if x.startswith(name))
        got = [int(n.replace(",", "")) for n in re.findall(r"card\s+([\d,]+) tokens", line)]
        assert got == [fit(per_token, 16), fit(per_token, 24)], name
        assert f"{per_token // 1024} KiB a token" in line
    assert fit(PER_TOKEN["MHA (Llama 2 7B)"], 16) == 1907 and fit(PER_TOKEN["GQA-8 (Mistral 7B)"], 24) == 68_664
    assert chapter_outputs.glued(NB, "kb_7b_16_mha") == "1,907"
    assert chapter_outputs.glued(NB, "kb_7b_weights") == "14 GB"


def test_section_links_the_worked_case_and_the_phases():
    text = chapter_outputs.section(NB, "kv_cache_basics-architecture-memory")
    for ref in ("kv_cache_calculator-7b-batch", "serving_kv_cache-fitting", "kv_cache_calculator-real-models",
                "scheduler_design-preemption"):
        assert f"{{ref}}`{ref}`" in text
    labels = chapter_outputs.book_labels()
    assert all(ref in labels for ref in re.findall(r"\{ref\}`([\w.-]+)`", text))
    chapter_outputs.assert_cited_in_list(text, ["mistral7b", "llama3", "vllmenoughkv"])
    assert "raising `gpu_memory_utilization` or lowering `max_model_len`" in text  # both fixes vLLM's error names
    assert "not a CUDA OOM" in text and "before any\nactivations" in text
    assert "14 GB of weights + 512 KiB a token of MHA cache (128 KiB with GQA-8)" in text

