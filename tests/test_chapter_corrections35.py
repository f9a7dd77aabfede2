"""Issue 35's corrections: each number the corrected lines quote, recomputed from the sources' own figures.

Written out by hand (products of the published shapes and rates), not read from the chapters.
"""
import csv
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mha_kit as mk

ROOT = Path(__file__).resolve().parents[1]

# Llama 3 70B (Llama 3 paper, Table 3; config.json): 80 layers, 64 query heads, 8 KV heads of 128
LAYERS, HEADS, KV_HEADS, HEAD_DIM, D_MODEL, D_FF, VOCAB = 80, 64, 8, 128, 8192, 28672, 128256
PROMPT = 8192  # Llama 3's context, the chapter's prompt
NDR = 400e9 / 8  # one InfiniBand NDR port, 400 Gb/s, in bytes/s
H100_BF16, H100_HBM = 989e12, 80e9  # dense bf16 FLOP/s (989 TFLOPS) and HBM bytes of an H100 SXM (datasheet)


def llama70_cache_bytes():
    return 2 * LAYERS * KV_HEADS * HEAD_DIM * 2 * PROMPT  # K and V, bf16


def test_nixl_pull_adds_the_whole_transfer():
    """disaggregated_serving: pulled after the prefill, 53.7 ms over one port; 6.7 ms per GPU at TP 8; 0.67 layer-wise."""
    whole = llama70_cache_bytes() / NDR
    assert round(whole * 1e3, 1) == 53.7
    assert round(whole / 8 * 1e3, 1) == 6.7  # each of 8 GPUs pulls its eighth over its own port
    assert round(whole / LAYERS * 1e3, 2) == 0.67  # layer-wise: only the last layer left
    facts = mk.MODEL_FACTS["llama-3-70b"]
    assert mk.kv_transfer_seconds(facts.config, PROMPT, mk.LINKS["ib-ndr"].bytes_per_s) == pytest.approx(whole)


def test_prefill_in_gpu_milliseconds_and_on_the_node():
    """1,223 GPU-ms at one H100's bf16 peak; the model does not fit one H100; 153 ms on 8."""
    attn_proj = D_MODEL * HEADS * HEAD_DIM * 2 + D_MODEL * KV_HEADS * HEAD_DIM * 2  # W_Q, W_O; W_K, W_V
    per_token = LAYERS * (attn_proj + 3 * D_MODEL * D_FF)
    flops = 2 * PROMPT * per_token + 2 * VOCAB * D_MODEL + LAYERS * 2 * HEADS * HEAD_DIM * PROMPT * (PROMPT + 1)
    seconds = flops / H100_BF16
    assert round(seconds * 1e3) == 1223 and round(seconds / 8 * 1e3) == 153
    weights = 2 * (LAYERS * (attn_proj + 3 * D_MODEL * D_FF + 2 * D_MODEL) + 2 * VOCAB * D_MODEL + D_MODEL)
    assert weights > H100_HBM and round(weights / 1e9) == 141  # bf16 weights: no single H100 holds them
    assert KV_HEADS >= 8  # TP 8 keeps one KV head per GPU: the ratio holds (t <= h_kv)


def test_moe_verification_touches_more_experts():
    """speculative_decoding: DeepSeek-V3, 8 of 256 routed experts; k = 4 reaches 37.6, 4.7 times 8."""
    touched = 256 * (1 - (1 - 8 / 256) ** 5)
    assert round(touched, 1) == 37.6 and round(touched / 8, 1) == 4.7
    assert round(256 * (1 - (1 - 8 / 256) ** 2), 1) == 15.8  # MTP, k = 1
    assert mk.experts_touched(5, 256, 8) == pytest.approx(touched)


def test_fp8_maxima_of_the_two_e4m3_variants():
    """low_precision_kv: E4M3 (CUDA) ends at 448, E4M3FNUZ (MI300-class) at 240."""
    assert float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max) == 448.0
    assert float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fnuz).max) == 240.0
    assert 1.875 * 2.0 ** (15 - 8) == 240.0 and 1.75 * 2.0 ** (15 - 7) == 448.0  # mantissa x 2^(top exponent - bias)


def test_minus_infinity_is_a_float16_problem():
    """cross_and_masked_attention: -1e9 overflows float16, not bfloat16; two finfo.min masks overflow everywhere."""
    with np.errstate(over="ignore"):
        assert float(np.finfo(np.float16).max) == 65504.0
        assert np.isneginf(np.float16(-1e9))
        assert np.isfinite(np.array(-1e9).astype(ml_dtypes.bfloat16))
        assert np.isneginf(np.array(np.finfo(np.float32).min).astype(ml_dtypes.bfloat16))
        for dtype in (np.float16, ml_dtypes.bfloat16, np.float32):
            low = np.array(ml_dtypes.finfo(dtype).min if dtype is ml_dtypes.bfloat16 else np.finfo(dtype).min,
                           dtype=dtype)
            assert np.isneginf((low + low).astype(dtype)), dtype
    assert mk.FLOAT_FORMATS["bf16"].max_finite == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


def meta_rotary(x, position, base=10000.0):
    """Meta's apply_rotary_emb: adjacent pairs as complex numbers, times exp(i m theta_j)."""
    r = x.shape[-1]
    freqs = 1.0 / base ** (np.arange(0, r, 2) / r)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * position * freqs)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def hf_permute(w, n_heads):
    """convert_llama_weights_to_hf.py's permute: view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2)."""
    dim1, dim2 = w.shape
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


def test_rope_layouts_agree_only_after_the_permutation():
    """positions, exercise 08: Meta's scores equal the half split's only with W_Q, W_K rows permuted."""
    rng = np.random.default_rng(0)
    n_heads, head_dim, d = 2, 16, 12
    w_q, w_k, x_q, x_k = (rng.standard_normal(shape) for shape in
                          ((n_heads * head_dim, d), (n_heads * head_dim, d), (d,), (d,)))
    for h in range(n_heads):
        rows = slice(h * head_dim, (h + 1) * head_dim)
        meta = meta_rotary(w_q[rows] @ x_q, 7) @ meta_rotary(w_k[rows] @ x_k, 3)
        q_hf, k_hf = hf_permute(w_q, n_heads)[rows] @ x_q, hf_permute(w_k, n_heads)[rows] @ x_k
        assert mk.rope_scores(q_hf, k_hf, [7], [3])[0, 0] == pytest.approx(meta, rel=1e-10)
        unpermuted = mk.rope_scores(w_q[rows] @ x_q, w_k[rows] @ x_k, [7], [3])[0, 0]
        assert unpermuted != pytest.approx(meta, rel=1e-3)


def test_stored_run_mla_is_faster_than_mha_but_compute_bound():
    """decode_benchmark: MLA 2.1 times MHA's speed (NumPy, 32K; 1.9 in the run stored before 2026-12-05), slower than GQA-8 and MQA with fewer bytes than GQA-8."""
    with open(ROOT / "benchmarks" / "results_reference" / "decode_benchmark.csv") as f:
        rows = {(r["variant"], r["path"]): r for r in csv.DictReader(f) if r["context"] == "32768"}
    ms = {v: float(rows[(v, "numpy")]["median_s"]) for v in ("MHA", "GQA-8", "MQA", "MLA")}
    assert round(ms["MHA"] / ms["MLA"], 1) == 2.1
    assert ms["MLA"] > ms["GQA-8"] > ms["MQA"]
    mla_bytes, gqa_bytes = 32768 * (512 + 64) * 4, 32768 * 2 * 8 * 128 * 4  # float32 cache
    assert int(rows[("MLA", "numpy")]["kv_bytes"]) == mla_bytes < gqa_bytes == int(rows[("GQA-8", "numpy")]["kv_bytes"])
    assert rows[("MLA", "numpy")]["achievable_limited_by"] == "compute"
