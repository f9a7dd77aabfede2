"""Section serving_kv_cache-three-engines of "Serving the KV cache": vLLM, SGLang and TensorRT-LLM side by side.

The records below are the engines' defaults as this test states them from the sources the section cites (vLLM
CacheConfig and the 0.20 default change; SGLang server_args.py and schedule_batch.py; TensorRT-LLM
llmapi/llm_args.py KvCacheConfig and the CapacitySchedulerPolicy enum). The computed row is redone without
mha_kit: Llama 3 8B from its published shapes (meta-llama/llama-models: d=4096, 32 layers, FFN 14,336,
8 KV heads of 128, vocabulary 128,256, untied embeddings) in bf16, the H100 data sheet's 80 GB, the
section's assumed 4 GB of activations, each engine's sizing rule written out, and SGLang's default fraction
from its _handle_gpu_memory_settings heuristic, which divides by the capacity the driver reports (81,559 MiB for an
H100 80GB HBM3, per nvidia-smi), not by the data sheet's 80 GB. A changed default in the chapter fails here.
"""
import math
from fractions import Fraction

import chapter_outputs

NB = chapter_outputs.notebook("serving_kv_cache")
LABEL = "serving_kv_cache-three-engines"
D, LAYERS, FFN, KV_WIDTH, VOCAB = 4096, 32, 14336, 8 * 128, 128_256
TOTAL, ACT = 80 * 10**9, 4 * 10**9
REPORTED_MIB = 81_559  # nvidia-smi total for an H100 80GB HBM3
PER_TOKEN = 2 * LAYERS * KV_WIDTH * 2  # K and V, bf16

# engine, pool setting, default fraction (None: SGLang's heuristic), page setting, tokens a page,
# pool runs out, prefix structure, host tier
RECORDS = (
    ("vLLM", "gpu_memory_utilization", "0.92", "block_size", 16, "preempt, recompute", "hashed full blocks",
     "offloading connector, LMCache"),
    ("SGLang", "--mem-fraction-static", None, "--page-size", 1, "retract to waiting queue", "radix tree", "HiCache"),
    ("TensorRT-LLM", "free_gpu_memory_fraction", "0.9", "tokens_per_block", 32, "reserved (NO_EVICT)",
     "enable_block_reuse", "host_cache_size"),
)


def params():
    return LAYERS * (2 * D * D + 2 * D * KV_WIDTH + 3 * D * FFN + 2 * D) + D + 2 * VOCAB * D


WEIGHTS = 2 * params()


def sglang_default(capacity_mib=REPORTED_MIB):
    reserve = 512 + max(8192, 2048) * 1.5 + 256 * 2 + 1 * 1 / 8 * 1024  # metadata, chunked prefill, graphs, tp*pp
    reserve = max(reserve, 10 * 1024)  # a card over 60 GiB keeps at least 10 GiB
    return round((capacity_mib - reserve) / capacity_mib, 3)


def pool(rule, fraction):
    f = Fraction(fraction)
    if rule == "vLLM":
        return math.floor(f * TOTAL) - WEIGHTS - ACT
    if rule == "SGLang":
        return math.floor(f * TOTAL) - WEIGHTS
    return math.floor(f * (TOTAL - WEIGHTS - ACT))


def tokens(rule, fraction, page):
    return pool(rule, fraction) // (page * PER_TOKEN) * page


def test_shapes():
    assert params() == 8_030_261_248 and PER_TOKEN == 131_072
    assert sglang_default() == 0.835 and sglang_default(TOTAL / 2**20) == 0.824


def test_printed_records_match_the_stated_defaults():
    lines = chapter_outputs.printed(NB, "em_records = ").splitlines()
    assert lines[0].split()[:3] == ["engine", "pool", "setting"]
    for line, (engine, knob, frac, page, page_tokens, full, prefix, host) in zip(lines[1:4], RECORDS):
        frac = frac or str(sglang_default())
        expect = (f"{engine:<13} {knob:<24} {frac:>7}  {page:<16} {page_tokens:>6}  {full:<25} {prefix:<18} {host}")
        assert line == expect


def test_computed_row():
    lines = chapter_outputs.printed(NB, "em_records = ").splitlines()
    assert lines[4] == f"Llama 3 8B bf16 on one H100: weights {WEIGHTS / 1e9:.2f} GB, {PER_TOKEN:,} bytes a token"
    cases = [(r[0], r[0], r[2] or str(sglang_default()), r[4]) for r in RECORDS] + [("vLLM <= 0.19", "vLLM", "0.9", 16)]
    for line, (name, rule, frac, page) in zip(lines[5:9], cases):
        b = pool(rule, frac)
        n = tokens(rule, frac, page)
        assert line == (f"  {name:<13} at {frac}: pool {b / 1e9:.2f} GB, {n // page:,} pages of {page}, {n:,} tokens")
    assert len(lines) == 9
    glue = chapter_outputs.cell_glue(NB, "em_records = ")
    assert glue["em_sglang_default"] == str(sglang_default()) and glue["em_sglang_reserve"] == "13,440 MiB"
    assert glue["em_cap_mib"] == f"{REPORTED_MIB:,} MiB" and glue["em_sglang_datasheet"] == str(sglang_default(TOTAL / 2**20))
    assert glue["em_tok_vllm"] == f"{tokens('vLLM', '0.92', 16):,}"
    assert glue["em_tok_vllm090"] == f"{tokens('vLLM', '0.9', 16):,}"
    assert glue["em_tok_sglang"] == f"{tokens('SGLang', str(sglang_default()), 1):,}"
    assert glue["em_tok_trt"] == f"{tokens('TensorRT-LLM', '0.9', 32):,}"
    # the prose: SGLang smallest at its own default, largest at a shared 0.9
    assert (tokens("TensorRT-LLM", "0.9", 32) > tokens("vLLM", "0.92", 16) > tokens("vLLM", "0.9", 16)
            > tokens("SGLang", str(sglang_default()), 1))
    assert pool("SGLang", "0.9") > pool("TensorRT-LLM", "0.9") > pool("vLLM", "0.9")  # the drill: same value, other order


def test_drill_arithmetic():
    text = chapter_outputs.section(NB, LABEL, end="serving_kv_cache-paged-kernel")
    assert 0.9 * 80 - 16 == 56 and round(0.9 * (80 - 16 - 4)) == 54 and round(0.9 * 80 - 16 - 4) == 52
    assert "0.9 × 80 − 16 = 56 GB" in text and "0.9 × (80 − 16 − 4) = 54 GB" in text and "0.9 × 80 − 16 − 4 = 52 GB" in text


def test_section_table_is_cited_and_linked():
    text = chapter_outputs.section(NB, LABEL, end="serving_kv_cache-paged-kernel")
    rows = [line for line in text.splitlines() if line.startswith("| **")]
    assert [r.split("**")[1] for r in rows] == ["Pool setting, default", "Page, default", "Admission",
                                                "Pool runs out", "Prefix structure", "Host tier"]
    for row in rows:
        cells = row.strip("|").split(" | ")[1:]
        assert len(cells) == 3 and all("{cite:p}" in c for c in cells), row
    for fact in ("`block_size`, 16 tokens", "`tokens_per_block`, 32", "GUARANTEED_NO_EVICT", "MAX_UTILIZATION",
                 "KV cache pool is full. Retract requests.", "host_cache_size", "HiCache", "enable_block_reuse"):
        assert fact in text, fact
    for ref in ("kv_cache_basics-engine-fractions", "serving_kv_cache-block-size-kernels", "scheduler_design-preemption",
                "scheduler_design-trtllm-two-stage", "prefix_caching-hashed", "prefix_caching-radix",
                "disaggregated_serving-disk-tier"):
        assert "{ref}`" + ref + "`" in text, ref
    assert "[E] Drill:" in text and ":class: dropdown followup" in text and "In the interview" in text
