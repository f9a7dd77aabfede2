"""NF4 levels against bitsandbytes' table and QLoRA's bit count; the STE training loop of mk.qat_linear."""
import numpy as np
import pytest

import mha_kit as mk

# bitsandbytes v0.50, bitsandbytes/functional.py, get_4bit_type("nf4")
BNB_NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
           -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
           0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
           0.7229568362236023, 1.0]


def test_nf4_levels_match_bitsandbytes_table():
    # bitsandbytes builds its quantile points in float32: agreement to about 1e-7
    np.testing.assert_allclose(mk.nf4_levels(), BNB_NF4, atol=2e-7)


def test_nf4_offset_is_mean_of_15_and_16_level_outer_quantiles():
    assert mk.NF4_OFFSET == pytest.approx(((1 - 1 / 30) + (1 - 1 / 32)) / 2, abs=1e-7)


def test_nf4_levels_exact_zero_and_asymmetry():
    levels = mk.nf4_levels()
    assert levels[0] == -1.0 and levels[-1] == 1.0
    assert (levels < 0).sum() == 7 and (levels == 0).sum() == 1 and (levels > 0).sum() == 8


def test_nf4_roundtrip_picks_nearest_level():
    w = np.array([[0.5, -1.0, 0.0, 0.04]])  # absmax 1: values are already normalised
    codes, absmax = mk.quantize_nf4(w, 4)
    assert absmax.tolist() == [1.0]
    back = mk.dequantize_nf4(codes, absmax, w.shape)
    levels = mk.nf4_levels()
    expected = [levels[np.abs(levels - v).argmin()] for v in w.ravel()]
    np.testing.assert_array_equal(back.ravel(), expected)
    assert back[0, 1] == -1.0 and back[0, 2] == 0.0


def test_nf4_beats_symmetric_int4_on_normal_weights():
    w = np.random.default_rng(0).normal(size=(64, 256))
    nf4 = mk.dequantize_nf4(*mk.quantize_nf4(w, 64), w.shape)
    int4 = mk.fake_quantize(w, 4, 64)
    assert np.mean((nf4 - w) ** 2) < np.mean((int4 - w) ** 2)


def test_double_quantization_bits_qlora_section_3():
    # QLoRA sec. 3: 32/64 = 0.5 bits of constants per parameter become 8/64 + 32/(64*256) = 0.127
    assert mk.double_quant_bits_per_weight() == 4 + 8 / 64 + 32 / (64 * 256)
    assert round(mk.double_quant_bits_per_weight() - 4, 3) == 0.127
    assert mk.double_quant_bits_per_weight(4, 64, 32, 256, 0) == 4.5


def test_nf4_errors():
    with pytest.raises(ValueError, match="offset must lie strictly between 0.5 and 1"):
        mk.nf4_levels(1.0)
    with pytest.raises(ValueError, match="must be a positive multiple of block_size"):
        mk.quantize_nf4(np.zeros(10), 64)
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        mk.quantize_nf4(np.zeros(64), 0)
    with pytest.raises(ValueError, match="scale_bits and scale2_bits must be >= 0"):
        mk.double_quant_bits_per_weight(scale_bits=-1)


def _layer(seed=2, d=64):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(32, d))
    x = rng.normal(size=(256, d)) @ rng.normal(size=(d, d)) / np.sqrt(d)  # correlated inputs
    return w, x


def test_qat_returns_grid_weights_no_worse_than_rounding():
    w, x = _layer()
    q = mk.qat_linear(w, x, 3, steps=200)
    scale = np.abs(w).max(axis=1, keepdims=True) / 3  # symmetric 3-bit: codes -3..3, teacher's scales
    codes = q / scale
    np.testing.assert_allclose(codes, np.rint(codes), atol=1e-9)
    assert np.abs(codes).max() <= 3
    err = lambda m: np.sum((x @ (m - w).T) ** 2)  # noqa: E731
    assert err(q) < err(mk.fake_quantize(w, 3, None))  # the STE steps found a better rounding


def test_qat_one_step_is_rounding():
    w, x = _layer()
    np.testing.assert_array_equal(mk.qat_linear(w, x, 4, steps=1), mk.fake_quantize(w, 4, None))


def test_qat_errors():
    w, x = _layer()
    with pytest.raises(ValueError, match=r"lr must be in \(0, 1\]"):
        mk.qat_linear(w, x, 4, lr=2.0)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 64\)"):
        mk.qat_linear(w, x[:, :10], 4)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        mk.qat_linear(w, x, 4, steps=0)
