"""mha_kit.requantize against Jacob et al. (2018) Sec. 2.2 / App. B and gemmlowp's fixedpoint.h."""
import numpy as np
import pytest

import mha_kit as mk


def _gemmlowp_srdhm(a, b):
    """SaturatingRoundingDoublingHighMul(int32 a, int32 b), gemmlowp fixedpoint/fixedpoint.h, in Python ints."""
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    num = ab + nudge
    return abs(num) // (1 << 31) * (1 if num >= 0 else -1)  # C++ integer division truncates toward zero


def _gemmlowp_rounding_divide_by_pot(x, exponent):
    """RoundingDivideByPOT(x, exponent), same file: mask, remainder, threshold."""
    mask = (1 << exponent) - 1
    remainder = x & mask  # two's complement AND, as on int32
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def test_quantize_multiplier_hand_worked():
    # M = 0.3 = 0.6 * 2^-1: M0 = 0.6, n = 1, and 0.6 * 2^31 = 1288490188.8 -> 1288490189
    assert mk.quantize_multiplier(0.3) == (1288490189, 1)
    assert mk.quantize_multiplier(0.5) == (2**30, 0)  # M0 = 0.5 exactly
    assert mk.quantize_multiplier(2.0**-10) == (2**30, 9)
    for m in (1e-6, 0.0123, 0.49999, 0.75, 0.999):
        m0, n = mk.quantize_multiplier(m)
        assert 2**30 <= m0 < 2**31 and n >= 0  # Sec. 2.2: at least 30 bits of relative accuracy
        assert abs(m0 / 2.0**31 * 2.0**-n - m) <= 2.0**-32 * 2.0**-n


def test_quantize_multiplier_errors():
    for bad in (0.0, -0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"must lie in \(0, 1\)"):
            mk.quantize_multiplier(bad)
    with pytest.raises(ValueError, match="rounds to 1"):
        mk.quantize_multiplier(1 - 2.0**-40)


def test_requantize_hand_worked():
    m0, n = mk.quantize_multiplier(0.3)
    # 1000 * 1288490189 + 2^30 = 1289563930824; >> 31 = 600; (600 + 1) >> 1 = 300; + z = 300 + 5
    assert mk.requantize(1000, m0, n, 5, -1000, 1000) == 305
    # App. B's example: -12 / 2^3 must give -2 (round to nearest), not RSHL's -1
    assert mk.requantize(-12, 2**30, 2, 0) == -2  # M = 0.5 * 2^-2 = 2^-3
    assert mk.requantize(12, 2**30, 2, 0) == 2
    assert mk.requantize(-11, 2**30, 2, 0) == -1  # -1.375
    # saturation: the clamp to the int8 range and to a raised qmin (a fused ReLU)
    assert mk.requantize(10**6, m0, n, 0) == 127 and mk.requantize(-(10**6), m0, n, 0) == -128
    assert mk.requantize(-50, m0, n, -100, qmin=-100) == -100  # -15 -> clamped at the zero point


def test_requantize_matches_gemmlowp_transliteration():
    rng = np.random.default_rng(0)
    acc = rng.integers(-(2**24), 2**24, size=400)
    acc[:8] = [0, 1, -1, 2**31 - 1, -(2**31), 3, -3, 12]
    for m in (0.3, 0.0123, 7.5e-4, 0.9):
        m0, n = mk.quantize_multiplier(m)
        ref = [_gemmlowp_rounding_divide_by_pot(_gemmlowp_srdhm(int(a), m0), n) for a in acc]
        got = mk.requantize(acc, m0, n, 0, qmin=-(2**40), qmax=2**40)  # wide range: no clamp
        assert np.array_equal(got, np.array(ref))


def test_requantize_against_float_arithmetic():
    rng = np.random.default_rng(1)
    acc = rng.integers(-(2**20), 2**20, size=5000)
    m = 0.0123
    m0, n = mk.quantize_multiplier(m)
    fixed = mk.requantize(acc, m0, n, 3, -(2**20), 2**20)
    exact = np.round(acc * m) + 3  # float reference, no clamp in range
    diff = np.abs(fixed - exact)
    assert diff.max() <= 1  # two roundings in a row can differ from one by a code
    assert np.mean(diff == 0) > 0.99


def test_requantize_errors():
    m0, n = mk.quantize_multiplier(0.3)
    with pytest.raises(ValueError, match="fit int32"):
        mk.requantize([2**31], m0, n, 0)
    with pytest.raises(ValueError, match=r"m0 in \[2\*\*30"):
        mk.requantize([1], 2**29, n, 0)
    with pytest.raises(ValueError, match="shift in"):
        mk.requantize([1], m0, 32, 0)
    with pytest.raises(ValueError, match="zero_point"):
        mk.requantize([1], m0, n, 200)
