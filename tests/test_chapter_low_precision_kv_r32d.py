"""Sections low_precision_kv-fused-or-not, -llamacpp-cache-types and -kv-or-weights of "Low-precision KV cache".

Recomputed without mha_kit from Llama 3 8B's shape written out (32 layers, 8 KV heads of 128,
8,030,261,248 parameters, weights in bf16), ggml's block structs (ggml/src/ggml-common.h: block_q8_0 =
fp16 d + 32 int8; block_q4_0 = fp16 d + 16 bytes; q4_1 and q5_1 add an fp16 m; q5_0 and q5_1 add 4 bytes
of high bits; 32 numbers a block) and llama.cpp's quantize table (tools/quantize/README.md, Llama-3.1-8B:
Q5_K_M 5.7036, Q4_K_M 4.8944 bits per weight).
"""
import pytest
import chapter_outputs

L, KV, HD, PARAMS = 32, 8, 128, 8_030_261_248
PER_TOKEN = 2 * L * KV * HD  # K and V numbers a token
WEIGHTS = 2 * PARAMS
NB = chapter_outputs.notebook("low_precision_kv")


def glued(key):
    return chapter_outputs.glued(NB, key)


BLOCK_BYTES = {"q8_0": 34, "q5_1": 24, "q5_0": 22, "q4_1": 20, "q4_0": 18}
BITS = {"f16": 16.0, **{t: b * 8 / 32 for t, b in BLOCK_BYTES.items()}}
BITS["iq4_nl"] = (2 + 16) * 8 / 32  # block_iq4_nl: fp16 d + 16 bytes of 4-bit indices


def test_block_bits():
    assert BITS == {"f16": 16.0, "q8_0": 8.5, "q5_1": 6.0, "q5_0": 5.5, "q4_1": 5.0, "q4_0": 4.5, "iq4_nl": 4.5}
    for t, b in BITS.items():
        assert glued(f"lp_lc_bits_{t}") == f"{b:g}"


@pytest.mark.parametrize("k,v", [("f16", "f16"), ("q8_0", "q8_0"), ("q8_0", "q5_1"), ("q8_0", "q4_0"), ("q4_0", "q4_0")])
def test_cache_gb_at_32k(k, v):
    half = 32768 * PER_TOKEN // 2
    gb = half * (BITS[k] + BITS[v]) / 8 / 1e9
    assert glued(f"lp_lc_gb_{k}_{v}") == f"{gb:.2f}"


def test_fp16_cache_is_4_29_gb_at_32k():
    assert 32768 * PER_TOKEN * 2 == 4_294_967_296
    assert glued("lp_lc_gb_f16_f16") == "4.29"


def step(bits):
    return WEIGHTS + 32 * 4096 * PER_TOKEN * bits / 8


def test_fused_and_unfused_step():
    meta = 32 / HD  # fp16 scale + fp16 zero point per head and token
    base = step(16)
    assert glued("lp_fu_bits_int8") == f"{8 + meta:g}" == "8.25"
    for b, name in ((8, "int8"), (4, "int4")):
        assert glued(f"lp_fu_{name}_fused") == f"{step(b + meta) / base:.2f}"
        assert glued(f"lp_fu_{name}_unfused") == f"{step(b + meta + 32) / base:.2f}"
        assert glued(f"lp_fu_cap_{name}") == f"{(b + meta + 32) / 16:.2f}"
    assert float(glued("lp_fu_int8_fused")) < 1 < float(glued("lp_fu_int8_unfused")) < float(glued("lp_fu_cap_int8")) < 3
    assert glued("lp_fu_share") == f"{100 * 32 * 4096 * PER_TOKEN * 2 / base:.0f}%"


def test_kv_or_weights():
    w_freed = PARAMS * (5.7036 - 4.8944) / 8 / 1e9
    assert glued("lp_kw_weight_freed") == f"{w_freed:.2f}" == "0.81"
    assert glued("lp_kw_w_q5") == f"{PARAMS * 5.7036 / 8e9:.2f}"
    assert glued("lp_kw_w_q4") == f"{PARAMS * 4.8944 / 8e9:.2f}"
    per_token = PER_TOKEN * (16 - 8.5) / 8  # bytes freed a token, f16 -> q8_0
    for s in (4096, 16384, 32768, 65536):
        assert glued(f"lp_kw_kv_freed_{s // 1024}k") == f"{per_token * s / 1e9:.2f}"
    assert glued("lp_kw_cross") == f"{w_freed * 1e9 / per_token / 1024:.1f}K"
    assert per_token * 16384 / 1e9 > w_freed > per_token * 4096 / 1e9  # the crossover lies between 4K and 16K
    assert glued("lp_kw_f16_64k") == f"{65536 * PER_TOKEN * 2 / 1e9:.1f}" == "8.6"


def test_12gb_card_at_64k():
    q8 = 65536 * PER_TOKEN * 8.5 / 8 / 1e9
    total = PARAMS * 5.7036 / 8 / 1e9 + q8
    assert glued("lp_kw_q8_64k") == f"{q8:.2f}" == "4.56"
    assert glued("lp_kw_total_64k") == f"{total:.1f}" == "10.3"
    assert glued("lp_kw_left_12") == f"{12 - total:.1f}" == "1.7"


def test_lmdeploy_reported_ratios():
    assert glued("lp_fu_pr1377_int8") == f"{10.37 / 9.42:.2f}" == "1.10"
    assert glued("lp_fu_pr1377_int4") == f"{10.49 / 9.42:.2f}" == "1.11"
    assert glued("lp_fu_doc13_int8") == f"{10.96 / 8.55:.2f}" == "1.28"
    assert glued("lp_fu_doc13_int4") == f"{11.91 / 8.55:.2f}" == "1.39"
    assert glued("lp_fu_621_gain") == f"{1160 / 1012 - 1:.0%}" == "15%"


def test_mixed_pair_build_caveat():
    text = " ".join(chapter_outputs.section(NB, "low_precision_kv-llamacpp-cache-types", end="low_precision_kv-kv-or-weights").split())
    assert text.count("GGML_CUDA_FA_ALL_QUANTS") >= 2
    assert "silently falls back to the CPU" in text


def test_sections_in_order():
    text = chapter_outputs.section(NB, "low_precision_kv-fused-or-not", end="low_precision_kv-turboquant")
    for label in ("low_precision_kv-llamacpp-cache-types", "low_precision_kv-kv-or-weights"):
        assert f"({label})=" in text
    assert "quantized V cache was requested, but this requires Flash Attention" in " ".join(text.split())
