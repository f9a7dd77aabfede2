"""weight_quantization r46: the W8A16 subsection (roofline rows, dequantize-then-GEMM bytes, per-channel int8 error),
the entropy (KL) calibration row and its bin-count sensitivity, the dynamic/static/QAT table, and the imatrix
sentence checked against llama.cpp's ggml-quants.c (quantize_q4_K: quantize_row_q4_K_ref without an imatrix)."""
import numpy as np
import pytest

from tests.chapter_outputs import assert_cited, glued, notebook, printed, section

NB = notebook("weight_quantization")

# Llama 3 70B (config.json): untied embeddings, GQA with 8 KV heads of 128
VOCAB, D, LAYERS, FFN, HEADS, KV_HEADS, HEAD_DIM = 128256, 8192, 80, 28672, 64, 8, 128
P70 = (LAYERS * (D * HEADS * HEAD_DIM * 2 + D * KV_HEADS * HEAD_DIM * 2 + 3 * D * FFN + 2 * D)
       + 2 * VOCAB * D + D)
KV_TOKEN = LAYERS * 2 * KV_HEADS * HEAD_DIM * 2  # bytes of bf16 K and V per token
BW, BF16, FP8 = 3.35e12, 989e12, 1979e12  # H100 SXM datasheet: HBM3 bytes/s, dense bf16 and FP8 FLOP/s
CTX, BATCH = 2048, 32


def _step_ms(bits, rate, tokens, ctx, seqs):
    weights, kv = P70 * bits / 8, KV_TOKEN * ctx * seqs
    queries = tokens // seqs
    attn = 2 * LAYERS * (2 * HEADS * queries * ctx * HEAD_DIM) * seqs // (2 if queries > 1 else 1)
    return 1e3 * max((weights + kv) / BW, 2 * P70 * tokens / rate + attn / BF16)


def test_parameter_count_matches_the_chapter():
    assert P70 == 70_553_706_496
    assert f"{P70 * 8 / 8 / 1e9:.1f}" == "70.6"


def test_w8a16_roofline_rows():
    bits = 8 + 16 / D
    assert glued(NB, "r46_w8_bits") == f"{bits:.3f}"
    assert glued(NB, "r46_w8_d1") == f"{_step_ms(bits, BF16, 1, CTX, 1):.1f}"
    assert glued(NB, "r46_bf16_d1") == f"{_step_ms(16, BF16, 1, CTX, 1):.1f}"
    assert glued(NB, "r46_gain_1") == f"{_step_ms(16, BF16, 1, CTX, 1) / _step_ms(bits, BF16, 1, CTX, 1):.2f}"
    gain32 = _step_ms(16, BF16, BATCH, CTX, BATCH) / _step_ms(bits, BF16, BATCH, CTX, BATCH)
    assert glued(NB, "r46_gain_32") == f"{gain32:.2f}"
    assert 1.5 < gain32 < 1.9  # the KV cache, read whatever the weight format, takes part of the 2x
    assert glued(NB, "r46_w8_pre") == f"{_step_ms(bits, BF16, CTX, CTX, 1):.0f}"
    assert glued(NB, "r46_fp8_pre") == f"{_step_ms(8, FP8, CTX, CTX, 1):.0f}"


def test_dequantize_then_gemm_is_slower_than_bf16():
    sep = 1e3 * (P70 * (1 + 2 + 2) + KV_TOKEN * CTX) / BW
    assert glued(NB, "r46_w8_sep") == f"{sep:.1f}"
    assert sep > _step_ms(16, BF16, 1, CTX, 1)


def _fake(w, bits, group, symmetric):
    rows, cols = w.shape
    g = w.reshape(rows, cols // group, group)
    if symmetric:
        scale = np.abs(g).max(axis=-1, keepdims=True) / (2 ** (bits - 1) - 1)
        return (np.round(g / scale) * scale).reshape(w.shape)
    lo, hi = g.min(axis=-1, keepdims=True), g.max(axis=-1, keepdims=True)
    scale = (hi - lo) / (2 ** bits - 1)
    zero = np.round(-lo / scale)
    return ((np.clip(np.round(g / scale) + zero, 0, 2 ** bits - 1) - zero) * scale).reshape(w.shape)


def test_per_channel_int8_error_against_int4_g128():
    rng = np.random.default_rng(46)
    w, x = rng.normal(0, 1, size=(32, D)), rng.normal(0, 1, size=(16, D))
    ref = x @ w.T

    def err(wq):
        return np.sqrt(np.mean((x @ wq.T - ref) ** 2) / np.mean(ref ** 2))
    e8, e4 = err(_fake(w, 8, D, True)), err(_fake(w, 4, 128, False))
    assert float(glued(NB, "r46_err_w8a16").rstrip("%")) == pytest.approx(100 * e8, abs=0.05)
    assert float(glued(NB, "r46_err_w4a16").rstrip("%")) == pytest.approx(100 * e4, abs=0.2)
    assert e4 > 8 * e8


def _kl_threshold(x, bins, stride=16, levels=128):
    """The KL search with np.add.at over the 128 levels (the chapter uses np.bincount)."""
    a = np.abs(x)
    hist, edges = np.histogram(a, bins=bins, range=(0, a.max()))
    scores = {}
    for i in range(levels, bins + 1, stride):
        p = hist[:i].astype(float)
        p[-1] += hist[i:].sum()
        lev = (np.arange(i) * levels) // i
        mass, used = np.zeros(levels), np.zeros(levels)
        np.add.at(mass, lev, hist[:i])
        np.add.at(used, lev, (hist[:i] != 0).astype(float))
        q = np.zeros(i)
        nz = hist[:i] != 0
        q[nz] = mass[lev[nz]] / used[lev[nz]]
        p, q = p / p.sum(), q / q.sum()
        m = p > 0
        scores[i] = np.sum(p[m] * np.log(p[m] / np.maximum(q[m], 1e-12)))
    return float(edges[min(scores, key=scores.get)])


def test_entropy_calibration_clips_the_heavy_tail_and_moves_with_the_bins():
    cal = np.random.default_rng(9).standard_t(3, size=20000)
    a2048 = _kl_threshold(cal, 2048)
    step = a2048 / 127
    err = np.sqrt(np.mean((np.clip(np.round(cal / step), -127, 127) * step - cal) ** 2) / np.mean(cal ** 2))
    assert glued(NB, "r46_kl_2048") == f"{a2048:.1f}"
    assert glued(NB, "r46_cal_kl") == f"{err:.1%}"
    assert glued(NB, "r46_cal_kl_clip") == f"{np.mean(np.abs(cal) > a2048):.2%}"
    assert "entropy (KL)       amax  21.09: error 12.33%" in printed(NB, "def entropy_amax")
    assert err > float(glued(NB, "wq_cal_max").rstrip("%")) / 100  # worse than max on this tail


def test_entropy_with_8192_bins():
    cal = np.random.default_rng(9).standard_t(3, size=20000)
    a8192 = _kl_threshold(cal, 8192)
    assert glued(NB, "r46_kl_8192") == f"{a8192:.1f}"
    assert a8192 < float(glued(NB, "r46_kl_2048"))  # more bins, a lower threshold: the range moves with the bins


def test_imatrix_sentence_matches_ggml_quants():
    text = section(NB, "weight_quantization-imatrix", end="weight_quantization-sparsity")
    assert "root mean square of its 32-weight sub-block" in text
    assert "twice the mean square of the 256-weight super-block" in text
    assert "twice the block's mean square" not in text
    assert_cited(text, ["llamacppimatrix"])


def test_sections_cite_and_link():
    cal = section(NB, "weight_quantization-calibration")
    assert_cited(cal, ["tpumlirkld", "llmcompressorschemes", "wu2020integer"])
    for ref in ("weight_quantization-slower", "weight_quantization-npu-int8-symmetric", "weight_quantization-qat-qad"):
        assert f"{{ref}}`{ref}`" in cal
    w8 = section(NB, "weight_quantization-w8a16", end="weight_quantization-fp4-fp8")
    for ref in ("weight_quantization-quality", "weight_quantization-ampere", "weight_quantization-slower"):
        assert f"{{ref}}`{ref}`" in w8


def test_w4a16_gain_and_rtn_label():
    g4 = _step_ms(16, BF16, 1, CTX, 1) / _step_ms(4 + (16 + 4) / 128, BF16, 1, CTX, 1)
    assert glued(NB, "r46_gain4_1") == f"{g4:.2f}"
    assert 1.7 < g4 / float(glued(NB, "r46_gain_1")) < 2.1  # W8A16 keeps about half the speed-up factor
    out = printed(NB, "w8_schemes")
    assert "W4A16 (RTN g128)" in out and "AWQ" not in out  # the 4-bit row is plain round-to-nearest


def test_kl_stride_and_clip_are_printed():
    cal = np.random.default_rng(9).standard_t(3, size=20000)
    clip = np.mean(np.abs(cal) > _kl_threshold(cal, 2048))
    assert f"entropy (KL) saturates {clip:.2%} of the calibration values" in printed(NB, "def entropy_amax")
    assert glued(NB, "r46_kl_stride") == "16" and glued(NB, "r46_tpumlir_stride") == "128"


def test_scoped_claims():
    dyn = section(NB, "weight_quantization-dynamic-static-qat", kinds=("markdown",))
    assert "nothing breaks" not in dyn and "GPU-days" not in dyn
    assert "the default for FP8 LLM serving" not in dyn
    assert_cited(dyn, ["xin2026qad", "vllmfp8online", "nvidiamodeloptconfig", "llmcompressorschemes", "xiao2023smoothquant"])
    w8 = section(NB, "weight_quantization-w8a16", end="weight_quantization-fp4-fp8", kinds=("markdown",))
    assert "In decode it pays only with dequantization inside" in w8
    assert_cited(w8, ["frantar2024marlin", "vllmmpkernels"])
