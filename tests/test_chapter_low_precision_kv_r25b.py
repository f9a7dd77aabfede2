"""Section low_precision_kv-int4-decision of "Low-precision KV cache": INT4 against FP8 by context length.

Recomputed without mha_kit from Llama 3 8B's shape written out (config.json / Llama 3 paper Table 3:
32 layers, 8 KV heads of 128, 8,030,261,248 parameters) and the H100 SXM datasheet (80 GB, 3.35 TB/s,
989 TFLOP/s dense bf16): KIVI-style groups (4 bits + an fp16 scale and an fp16 zero point per group),
a residual of 128 bf16 tokens, the batch min(fits, 256) and a roofline decode step.
"""
import math

import pytest
import chapter_outputs

L, KV, HD, PARAMS = 32, 8, 128, 8_030_261_248
HBM, BW, FLOPS = 80e9, 3.35e12, 989e12
R, CAP = 128, 256
PER_TOKEN = 2 * L * KV * HD  # cached numbers per token, K and V
WEIGHTS = 2 * PARAMS
FREE = HBM - WEIGHTS
CONTEXTS = (1024, 4096, 16384, 32768, 131072)


NB = chapter_outputs.notebook("low_precision_kv")  # read once: glued() is called for every value


def glued(key):
    return chapter_outputs.glued(NB, key)


def int4_bits(group):
    return 4 + 2 * 16 / group


def avg_bits(context, bits):
    full = min(context, R)
    return (16 * full + bits * (context - full)) / context


def seq_bytes(context, fmt):
    if fmt == "int4":
        return math.ceil(PER_TOKEN * context * avg_bits(context, int4_bits(64)) / 8)
    return PER_TOKEN * context * {"bf16": 2, "fp8": 1}[fmt]


def step(context, fmt):
    per_seq = seq_bytes(context, fmt)
    fits = int(FREE // per_seq)
    batch = min(fits, CAP)
    read = WEIGHTS + batch * per_seq
    seconds = max(read / BW, 2 * PARAMS * batch / FLOPS)
    return fits, batch, batch * per_seq / read, batch / seconds, read / BW >= 2 * PARAMS * batch / FLOPS


def test_bits_per_number():
    assert (int4_bits(32), int4_bits(64)) == (5.0, 4.5)
    assert glued("lp_i4_bits_g32") == "5" and glued("lp_i4_bits_g64") == "4.5"
    assert glued("lp_i4_k8v4_bits") == "6.25"
    assert glued("lp_i4_eff_1k") == f"{avg_bits(1024, 4.5):.2f}" == "5.94"
    assert glued("lp_i4_eff_1k_g32") == f"{avg_bits(1024, 5.0):.2f}" == "6.38"
    assert glued("lp_i4_eff_128k") == f"{avg_bits(131072, 4.5):.2f}" == "4.51"
    printed = chapter_outputs.printed(chapter_outputs.notebook("low_precision_kv"), "def stored_bits")
    for s in CONTEXTS:
        assert f"{s:>9,}{avg_bits(s, 5.0):>12.2f}{avg_bits(s, 4.5):>12.2f}{8:>8}" in printed


@pytest.mark.parametrize("context", CONTEXTS)
def test_fit_and_gain(context):
    f8, i4 = step(context, "fp8"), step(context, "int4")
    assert f8[4] and i4[4]  # memory-bound, as the prose says
    k = context // 1024
    assert int(glued(f"lp_i4_fit_fp8_{k}k")) == f8[0]
    assert int(glued(f"lp_i4_fit_int4_{k}k")) == i4[0]
    assert glued(f"lp_i4_gain_{k}k") == f"{i4[3] / f8[3]:.2f}"
    assert glued(f"lp_i4_share_{k}k") == f"{100 * f8[2]:.0f}%"


def test_the_story_the_prose_tells():
    fits = {s: (step(s, "fp8")[0], step(s, "int4")[0]) for s in CONTEXTS}
    assert fits[1024] == (952, 1283) and fits[131072] == (7, 13)
    assert fits[1024][0] > CAP > fits[4096][0]  # memory sets FP8's batch from 4K on
    assert fits[16384][1] < CAP < fits[4096][1]  # and INT4's from 16K
    gains = [step(s, "int4")[3] / step(s, "fp8")[3] for s in CONTEXTS]
    assert gains == sorted(gains) and gains[0] < 1.2 < 1.7 < gains[-1]
    assert abs(gains[-1] - 8 / avg_bits(131072, 4.5)) < 0.1  # about 8 / b once memory sets both batches
    f = step(1024, "fp8")[2]  # same batch at 1K: the closed form of the prose
    assert gains[0] == pytest.approx(1 / (1 - f * (1 - avg_bits(1024, 4.5) / 8)))
    assert step(1024, "fp8")[1] == step(1024, "int4")[1] == CAP  # same batch at 1K: the gain is bytes only
    assert int(glued("lp_i4_cap")) == CAP
    assert glued("lp_i4_weights_gb") == f"{WEIGHTS / 1e9:.1f} GB"


def test_review_25_numbers():
    # KIVI flushes the key residual whole at R tokens: keys keep R/2 on average, values keep R
    full_keys = (16 * (R // 2) + 4.5 * (1024 - R // 2)) / 1024
    kivi = (full_keys + avg_bits(1024, 4.5)) / 2
    assert glued("lp_i4_eff_1k_kivi") == f"{kivi:.2f}" == "5.58"
    assert glued("lp_i4_save_1k") == f"{1 - avg_bits(1024, 4.5) / 8:.0%}" == "26%"
    assert glued("lp_i4_save_1k_kivi") == f"{1 - kivi / 8:.0%}" == "30%"
    # the residual's extra cost is (16 - b) R / s, not 16 R / s
    assert avg_bits(1024, 4.5) == pytest.approx(4.5 + (16 - 4.5) * R / 1024)
    f8, i4 = step(131072, "fp8"), step(131072, "int4")
    assert glued("lp_i4_batch_ratio_128k") == f"{i4[1] / f8[1]:.2f}" == "1.86"
    assert glued("lp_i4_eight_over_b_128k") == f"{8 / avg_bits(131072, 4.5):.2f}" == "1.77"
    assert float(glued("lp_i4_gain_128k")) < i4[1] / f8[1]  # the fuller memory reads more per step
    weight_share = 1 - step(1024, "fp8")[2]
    assert glued("lp_i4_wshare_1k") == f"{100 * weight_share:.0f}%" == "48%"
    assert weight_share < 0.5  # the weights are not "most" of the step
    cross = FREE / (PER_TOKEN * CAP)
    assert glued("lp_i4_cross_fp8_k") == f"{cross / 1024:.1f}K"
    assert 1024 < cross < 4096
    # more weight bytes on the same GPU: memory takes over the batch at a shorter context
    assert (HBM - 40e9) / (PER_TOKEN * CAP) < cross
