"""The NF4, QAT and A100 sections of book/weight_quantization.ipynb, recomputed with the products written out."""
import numpy as np
import pytest

import mha_kit as mk

P70 = 70_553_706_496  # Llama 3 70B parameters (tests/test_chapter_weight_quantization.py derives it)
H100_BW = 3.35e12
A100_BW, A100_BF16, A100_INT8 = 1.555e12, 312e12, 624e12  # A100 40GB datasheet, dense


def test_nf4_bits_and_llama_70b_gigabytes():
    bits = 4 + 8 / 64 + 32 / (64 * 256)  # QLoRA sec. 3
    assert round(bits, 3) == 4.127 == round(mk.double_quant_bits_per_weight(), 3)
    assert round(P70 * bits / 8 / 1e9, 1) == 36.4
    assert round(P70 * 4.5 / 8 / 1e9, 1) == 39.7  # FP32 absmax per 64, no double quantization


def test_dequantize_then_linear_moves_more_bytes_than_bf16():
    nf4 = (4 + 8 / 64 + 32 / (64 * 256)) / 8
    dequant = nf4 + 2 + 2  # read the codes, write bf16, read bf16
    assert round(1e3 * P70 * dequant / H100_BW) == 95
    assert round(1e3 * P70 * 2 / H100_BW, 1) == 42.1
    assert round(1e3 * P70 * nf4 / H100_BW, 1) == 10.9


def test_a100_roofline_by_scheme():
    fp8_decode = P70 * 1 / A100_BW  # FP8 Marlin: one byte per weight, bf16 math
    assert round(1e3 * fp8_decode) == 45
    assert round(1e3 * P70 * 2 / A100_BW) == 91
    assert round(1e3 * 2 * P70 * 4096 / A100_BF16) == 1852  # W8A16 prefill: bf16 rate
    assert round(1e3 * 2 * P70 * 4096 / A100_INT8) == 926  # W8A8 INT8 prefill: twice the rate
    assert mk.weight_step_seconds(P70, 4096, 8, A100_BW, A100_BF16) == pytest.approx(2 * P70 * 4096 / A100_BF16)
    assert round(1e3 * P70 * 4.25 / 8 / A100_BW) == 24
    assert mk.GPUS["a100-40gb"].hbm_bandwidth == A100_BW and mk.GPUS["a100-40gb"].bf16_flops == A100_BF16


def test_nf4_error_against_int4_on_normal_weights():
    # the chapter's sample: seed 5, normal(0, 0.02), 128 x 512, blocks of 64
    w = np.random.default_rng(5).normal(0, 0.02, size=(128, 512))
    levels = np.array(mk.nf4_levels())
    blocks = w.reshape(-1, 64)
    amax = np.abs(blocks).max(1, keepdims=True)
    nf4 = levels[np.abs(blocks[..., None] / amax[..., None] - levels).argmin(-1)] * amax
    int4 = np.clip(np.rint(blocks / (amax / 7)), -7, 7) * (amax / 7)
    rel = lambda a: np.sqrt(np.mean((a - blocks) ** 2) / np.mean(blocks ** 2))  # noqa: E731
    assert f"{rel(nf4):.1%}" == "9.2%" and f"{rel(int4):.1%}" == "10.7%"


def test_scale_granularity_epilogue_and_block_rescales():
    # per-token x per-channel scales factor out of the K sum exactly; block scales need K/128 rescales
    rng = np.random.default_rng(0)
    a_codes, w_codes = rng.integers(-8, 8, (4, 256)).astype(float), rng.integers(-8, 8, (256, 6)).astype(float)
    s_a, s_w = rng.uniform(0.5, 2.0, (4, 1)), rng.uniform(0.5, 2.0, (1, 6))
    np.testing.assert_allclose((a_codes @ w_codes) * s_a * s_w, (a_codes * s_a) @ (w_codes * s_w), rtol=1e-12)
    s_ab = rng.uniform(0.5, 2.0, (4, 2))  # one scale per token and 128 of K
    blockwise = sum((a_codes[:, 128 * b:128 * (b + 1)] * s_ab[:, b:b + 1]) @ w_codes[128 * b:128 * (b + 1)]
                    for b in range(2))
    dequant = (a_codes * np.repeat(s_ab, 128, axis=1)) @ w_codes
    np.testing.assert_allclose(blockwise, dequant, rtol=1e-12)
    assert 1024 // 128 == 8  # rescaled partial sums per output in the chapter's K = 1,024
