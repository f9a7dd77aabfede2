"""Sections kv_cache_basics-reuse-across-calls and kv_cache_basics-npu-memory of "The KV cache from zero".

Recomputed from Llama 3 8B's shape (config.json) and the written-out FLOP and byte counts, not through
mk.prefill_flops or mk.kv_cache_bytes: the prefill of a 2,050-token input against 50 new tokens after a
2,000-token cached prompt, ten calls with and without one shared prefill, the prompt cache and its copy
on an H100; and MindIE's blocks (128 tokens, npu_mem // block bytes) for a fixed npuMemSize and for -1
(total x 0.8 - what is in use after the warm-up) on a card taken as 64 GiB with 4 GiB of runtime assumed.
"""
from pathlib import Path

import chapter_outputs

# Llama 3 8B (config.json): 32 layers, d 4096, 32 query heads and 8 KV heads of 128, FFN 14336, vocabulary 128256
L, D, H, KV, HD, FFN, V = 32, 4096, 32, 8, 128, 14_336, 128_256
PARAMS = 2 * V * D + L * (D * HD * (H + 2 * KV) + H * HD * D + 3 * D * FFN + 2 * D) + D  # untied head, norms
WEIGHT_BYTES = 2 * PARAMS  # bf16
KV_TOKEN = 2 * L * KV * HD * 2  # keys and values, all layers, bf16
BW, PEAK = 3.35e12, 989e12  # H100 SXM datasheet: HBM3 bytes/s, dense bf16 FLOP/s
SHARED, QUESTION, CALLS = 2000, 50, 10


def linear_per_token():
    # q, k, v, o projections and the three SwiGLU matrices, 2 FLOPs a multiply-add, every layer
    return 2 * L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FFN)


def prefill(new, cached=0):
    # query i (1-based) of the new tokens scores and mixes cached + i keys: 4 h d_h FLOPs a key per layer
    keys = sum(cached + i for i in range(1, new + 1))
    return linear_per_token() * new + 4 * H * HD * L * keys + 2 * V * D  # last position's logits only


NB = chapter_outputs.notebook("kv_cache_basics")


def glued(key):
    return chapter_outputs.glued(NB, key)


def tflop(x):
    return f"{x / 1e12:,.1f}"


def test_model_constants():
    assert PARAMS == 8_030_261_248  # Llama 3 8B's published count
    assert KV_TOKEN == 131_072
    assert glued("kb_npu_block") == "16 MiB" and 128 * KV_TOKEN == 16 * 2**20  # a 128-token MindIE block


def test_prefill_per_call():
    full, reuse = prefill(SHARED + QUESTION), prefill(QUESTION, SHARED)
    assert glued("kb_reuse_full") == tflop(full) == "29.7"
    assert glued("kb_reuse_call") == tflop(reuse) == "0.8"
    assert glued("kb_reuse_saved_pct") == f"{(full - reuse) / full:.1%}"
    assert 0.97 < (full - reuse) / full < 0.98  # 50 of 2,050 tokens left, plus their longer attention


def test_ten_calls():
    no_reuse = CALLS * prefill(SHARED + QUESTION)
    reuse = prefill(SHARED) + CALLS * prefill(QUESTION, SHARED)
    assert glued("kb_reuse_total_no") == tflop(no_reuse)
    assert glued("kb_reuse_total_yes") == tflop(reuse)
    assert glued("kb_reuse_ratio") == f"{no_reuse / reuse:.1f}" == "8.1"
    out = chapter_outputs.printed(NB, "SHARED, QUESTION, CALLS")
    assert f"{CALLS} calls: {tflop(no_reuse)} TFLOP against {tflop(reuse)} TFLOP" in out


def test_prompt_cache_and_copy():
    prefix = SHARED * KV_TOKEN
    assert prefix == 250 * 2**20 and glued("kb_reuse_kv") == "250 MiB"
    copy_s = 2 * prefix / BW
    saved_s = (prefill(SHARED + QUESTION) - prefill(QUESTION, SHARED)) / PEAK
    assert glued("kb_reuse_copy_ms") == f"{1e3 * copy_s:.2f}" == "0.16"
    out = chapter_outputs.printed(NB, "SHARED, QUESTION, CALLS")
    assert f"at least {1e3 * copy_s:.2f} ms on an H100" in out  # peak bandwidth: a floor, not an estimate
    assert glued("kb_reuse_saved_ms") == f"{1e3 * saved_s:.1f}"
    assert copy_s < saved_s / 100  # the copy is cheap against what it saves


def test_mindie_blocks():
    block = 128 * 2 * L * KV * HD * 2  # cacheBlockSize 128 tokens, K and V, bf16
    assert block == 16 * 2**20 and glued("kb_npu_block") == "16 MiB"
    for gb, tokens in ((8, 65_536), (20, 163_840)):
        blocks = gb * 2**30 // block
        assert glued(f"kb_npu_tokens_{gb}") == f"{blocks * 128:,}" == f"{tokens:,}"
    total, runtime = 64 * 2**30, 4 * 2**30
    for sidecar_gib, tokens in ((0, 264_064), (10, 182_144)):
        auto = int(0.8 * total) - (WEIGHT_BYTES + runtime + sidecar_gib * 2**30)
        assert glued(f"kb_npu_auto_{sidecar_gib}") == f"{auto / 2**30:.1f} GiB"
        assert glued(f"kb_npu_auto_tokens_{sidecar_gib}") == f"{auto // block * 128:,}" == f"{tokens:,}"
    assert glued("kb_npu_left") == f"{(total - int(0.8 * total)) / 2**30:.1f} GiB" == "12.8 GiB"


def test_section_links_and_sources():
    text = chapter_outputs.section(NB, "kv_cache_basics-reuse-across-calls", end="kv_cache_basics-memory-stays",
                                   kinds=("markdown",))
    for ref in ("prefix_caching-hashed", "prefix_caching-radix", "kv_cache_basics-beam-search"):
        assert f"{{ref}}`{ref}`" in text
    assert "copy.deepcopy" in text and "encoder_outputs" in text
    npu = chapter_outputs.section(NB, "kv_cache_basics-npu-memory", end="kv_cache_basics-concurrency",
                                  kinds=("markdown",))
    assert "npuMemSize" in npu and "NPU_MEMORY_FRACTION" in npu
    bib = (Path(__file__).resolve().parent.parent / "references.bib").read_text(encoding="utf-8")
    for key in ("hfkvcachereuse", "hfgenerateprefill", "mindieserviceparams", "mindiekvsizing"):
        assert f"{{{key}," in bib
        assert f"{key}{{" in text + npu


def test_reused_cache_slice_and_engine_fractions():
    # a reused cache after one call holds prompt + question + answer; the next input is prompt + question
    answer = 200
    n = (SHARED + QUESTION) - (SHARED + QUESTION + answer)  # input length - cache.get_seq_length()
    assert n < 0
    ids = list(range(SHARED + QUESTION))
    fed = ids[-n:]  # Python accepts the negative slice: the first |n| tokens are dropped, no error
    assert len(fed) == SHARED + QUESTION - answer and fed[0] == answer
    text = chapter_outputs.section(NB, "kv_cache_basics-reuse-across-calls", end="kv_cache_basics-memory-stays",
                                   kinds=("markdown",))
    assert "no error is raised" not in text.replace("neither case raises an error", "")
    assert "5.25.0" in text and "negative" in text and "two tensors per layer" in text
    assert "_expand_inputs_for_generation" in text
    npu = chapter_outputs.section(NB, "kv_cache_basics-npu-memory", end="kv_cache_basics-concurrency",
                                  kinds=("markdown",))
    # MindIE: total x fraction - (total - free), vLLM's form; TRT-LLM takes a fraction of what is free
    total, used, frac = 64.0, 20.0, 0.8
    assert total * frac - used != frac * (total - used)
    assert "as with TensorRT-LLM above" not in npu and "gpu_memory_utilization" in npu
    assert "_warmup_specified" in npu and "Huawei interviewer" not in npu
    assert f"as many cards\nas KV heads ({KV} here)" in npu or f"as KV heads ({KV} here)" in npu
