"""Section weight_quantization-fp8-w4a16-w4a8: FP8, W4A16 AWQ and W4A8 AWQ for Llama 3 70B on one H100.

Recomputed from Llama 3 70B's config.json shape and the H100 SXM datasheet (80 GB, 3.35 TB/s, 989 TFLOPS
bf16 and 1,979 FP8 dense), written out here rather than through mha_kit, and compared with the stored outputs.
"""
import pytest

import chapter_outputs

L, D, KV, HD = 80, 8192, 8, 128  # layers, width, KV heads, head size
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
HBM, BW, BF16, FP8 = 80e9, 3.35e12, 989e12, 1979e12
KV_TOK = 2 * L * KV * HD * 2  # K and V, bf16
BITS = {"bf16": 16, "fp8": 8, "w4a16": 4 + 16 / 128, "w4a8": 4 + 16 / 128}  # ModelOpt INT4_AWQ_CFG is symmetric
AUTOAWQ_BITS = 4 + (16 + 16) / 128  # llm-awq / AutoAWQ: fp16 scale and zero per group of 128
RATE = {"bf16": BF16, "fp8": FP8, "w4a16": BF16, "w4a8": FP8}
NB = chapter_outputs.notebook("weight_quantization")


def glued(key):
    return chapter_outputs.glued(NB, key)


def step_ms(scheme, tokens):
    return 1e3 * max(P70 * BITS[scheme] / 8 / BW, 2 * P70 * tokens / RATE[scheme])


def test_bytes_per_parameter():
    assert BITS["w4a16"] == BITS["w4a8"] == 4.125 and AUTOAWQ_BITS == 4.25
    for s in BITS:
        assert glued(f"f3_{s}_bpp") == f"{BITS[s] / 8:.4f}"


@pytest.mark.parametrize("scheme", list(BITS))
def test_weights_and_cache_on_one_h100(scheme):
    w = P70 * BITS[scheme] / 8
    assert glued(f"f3_{scheme}_gb") == f"{w / 1e9:.1f}"
    assert glued(f"f3_{scheme}_tok") == f"{max(int((0.9 * HBM - w) // KV_TOK), 0):,}"


def test_fp8_leaves_little_cache():
    assert KV_TOK == 327_680 and glued("f3_kv_kib") == "320"
    assert glued("f3_fp8_tok") == "4,413"
    assert int(glued("f3_w4a16_tok").replace(",", "")) > 20 * 4413


@pytest.mark.parametrize("scheme", list(BITS))
def test_step_times(scheme):
    for case, n in (("d1", 1), ("d256", 256), ("p", 4096)):
        assert glued(f"f3_{scheme}_{case}") == f"{step_ms(scheme, n):.1f}"


def test_winners_by_regime():
    assert step_ms("w4a16", 1) == step_ms("w4a8", 1) == min(step_ms(s, 1) for s in BITS)  # same int4 bytes
    assert glued("f3_w4a16_d1") == glued("f3_w4a8_d1")
    assert step_ms("w4a16", 1) < step_ms("fp8", 1) / 1.8  # both int4 schemes read about half FP8's bytes
    assert min(BITS, key=lambda s: step_ms(s, 256)) == "w4a8"
    assert step_ms("fp8", 256) < step_ms("w4a16", 256)
    assert step_ms("w4a16", 4096) == step_ms("bf16", 4096)  # W4A16 multiplies at the bf16 rate
    assert step_ms("w4a8", 4096) == step_ms("fp8", 4096) == pytest.approx(step_ms("bf16", 4096) / 2, rel=1e-3)


def test_autoawq_format_and_cache_per_sequence():
    assert glued("f3_autoawq_bpp") == f"{AUTOAWQ_BITS / 8:.4f}" == "0.5312"
    assert glued("f3_autoawq_gb") == f"{P70 * AUTOAWQ_BITS / 8 / 1e9:.1f}"
    w4a8_tok = int((0.9 * HBM - P70 * BITS["w4a8"] / 8) // KV_TOK)
    assert glued("f3_tok_per_seq256") == f"{w4a8_tok // 256:,}"
    assert glued("f3_fp8_tok_per_seq256") == f"{4413 // 256:,}" == "17"
