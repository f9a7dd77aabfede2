"""mha_kit.numerics: format limits from bit layouts, rounding, soft-capping, QK-norm, entropy."""
import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

FEW = settings(max_examples=30, deadline=None)


@pytest.mark.parametrize("name, max_finite, smallest_normal, epsilon", [
    ("fp32", float(np.finfo(np.float32).max), float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).eps)),
    ("fp16", 65504.0, 2.0**-14, 2.0**-10),  # numpy's float16 agrees (next test)
    ("bf16", (2 - 2.0**-7) * 2.0**127, 2.0**-126, 2.0**-7),  # float32's exponent, 7 stored mantissa bits
    ("fp8_e5m2", 57344.0, 2.0**-14, 0.25),  # FP8 paper, Table 1
    ("fp8_e4m3", 448.0, 2.0**-6, 0.125),  # FP8 paper, Table 1: no inf, S.1111.111 is NaN
])
def test_format_limits(name, max_finite, smallest_normal, epsilon):
    fmt = mk.FLOAT_FORMATS[name]
    assert (fmt.max_finite, fmt.smallest_normal, fmt.epsilon) == (max_finite, smallest_normal, epsilon)
    assert fmt.exp_limit == math.log(max_finite)


def test_fp16_limits_are_numpys():
    info, fmt = np.finfo(np.float16), mk.FLOAT_FORMATS["fp16"]
    assert (fmt.max_finite, fmt.smallest_normal, fmt.epsilon) == (float(info.max), float(info.tiny), float(info.eps))


@pytest.mark.parametrize("name", ["fp32", "bf16", "fp16", "fp8_e5m2", "fp8_e4m3"])
def test_limits_derived_from_the_bit_layout_are_ml_dtypes_finfo(name):
    # the teaching computation (bias, exponent and mantissa widths) against the library that stores the format
    ml_dtypes = pytest.importorskip("ml_dtypes")
    fmt = mk.FLOAT_FORMATS[name]
    info = ml_dtypes.finfo(mk.storage_dtype(name))
    assert (fmt.exponent_bits, fmt.mantissa_bits) == (info.nexp, info.nmant)
    assert fmt.max_finite == float(info.max)
    assert fmt.smallest_normal == float(info.smallest_normal)
    assert fmt.smallest_subnormal == float(info.smallest_subnormal)
    assert fmt.epsilon == float(info.eps)


def test_storage_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert mk.storage_dtype("fp32") == np.float32 and mk.storage_dtype("fp16") == np.float16
    assert mk.storage_dtype("bf16") == np.dtype(ml_dtypes.bfloat16)
    assert mk.storage_dtype(mk.FLOAT_FORMATS["fp8_e4m3"]) == np.dtype(ml_dtypes.float8_e4m3fn)
    assert mk.storage_dtype("fp8_e5m2") == np.dtype(ml_dtypes.float8_e5m2)


def test_bf16_has_float32_range_and_fp16_does_not():
    bf16, fp16, fp32 = (mk.FLOAT_FORMATS[k] for k in ("bf16", "fp16", "fp32"))
    assert bf16.exp_limit == pytest.approx(fp32.exp_limit, abs=0.01) and bf16.exp_limit > 88
    assert 11 < fp16.exp_limit < 11.1  # exp(11.1) > 65504


def _wide_floats(seed, size=20000):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(size) * np.exp2(rng.uniform(-30, 20, size))  # subnormals to overflow


@pytest.mark.parametrize("name, dtype", [("fp16", np.float16), ("fp32", np.float32)])
def test_rounding_agrees_with_numpy_casts(name, dtype):
    x = np.concatenate([_wide_floats(0), [0.0, -0.0, np.inf, -np.inf, 65504.0, 65519.9, 65520.0, 2.0**-24, 2.0**-25]])
    with np.errstate(over="ignore"):
        expected = x.astype(dtype).astype(np.float64)
    np.testing.assert_array_equal(mk.round_to_format(x, name), expected)


@pytest.mark.parametrize("name, dtype_name", [("bf16", "bfloat16"), ("fp8_e4m3", "float8_e4m3fn"),
                                              ("fp8_e5m2", "float8_e5m2")])
def test_rounding_agrees_with_ml_dtypes(name, dtype_name):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.concatenate([_wide_floats(1), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300]])  # overflow included
    with np.errstate(over="ignore", invalid="ignore"):
        expected = x.astype(getattr(ml_dtypes, dtype_name)).astype(np.float64)
    np.testing.assert_array_equal(mk.round_to_format(x, name), expected)


def test_rounding_is_ml_dtypes_cast_of_bf16_even_where_a_direct_rounding_differs():
    # 1 + 2^-8 + 2^-30 lies just above the midpoint of 1 and 1 + 2^-7. ml_dtypes casts float64 to
    # bfloat16 through float32, where the 2^-30 is lost, and the tie then goes to the even 1.0; a
    # hand-written direct rounding gives 1 + 2^-7. One path for the number: the library's.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = 1 + 2.0**-8 + 2.0**-30
    assert mk.round_to_format(x, "bf16") == float(np.float64(x).astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("name", ["bf16", "fp8_e4m3", "fp8_e5m2"])
def test_formats_stored_by_ml_dtypes_name_the_package_when_it_is_missing(name, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now raises ImportError
    with pytest.raises(ImportError, match=rf"^format '{name}' needs the package ml_dtypes .*\(pip install ml-dtypes\)"):
        mk.round_to_format(1.0, name)
    assert mk.round_to_format(1 + 2.0**-11, "fp16") == 1.0  # numpy's own formats still work
    assert mk.softmax_in_format(np.zeros(2), "fp32").tolist() == [0.5, 0.5]


def test_e4m3_has_no_infinity():
    rounded = mk.round_to_format([448.0, 460.0, 470.0, -1e6], "fp8_e4m3")
    assert rounded[:2].tolist() == [448.0, 448.0] and np.isnan(rounded[2:]).all()
    assert mk.round_to_format([1e6], "fp8_e5m2")[0] == np.inf


def test_bf16_keeps_8_significant_bits():
    assert mk.round_to_format(1 + 2.0**-8, "bf16") == 1.0  # half a step: ties to even
    assert mk.round_to_format(1 + 2.0**-7, "bf16") == 1 + 2.0**-7
    assert mk.round_to_format(257.0, "bf16") == 256.0


def test_running_sum_stalls_in_bf16():
    values = np.full(4096, 1 / 4096)
    assert mk.running_sum(values, "fp32") == 1.0
    assert mk.running_sum(values, "bf16") == 0.0625  # 1/16: each addend is half a step of the total, and rounds away


def test_softmax_without_the_max_shift_overflows_in_fp16_only():
    scores = np.array([[2.0, 12.0, 5.0]])  # exp(12) > 65504
    unshifted = mk.softmax_in_format(scores, "fp16", subtract_max=False)
    assert np.isnan(unshifted[0, 1]) and unshifted[0, [0, 2]].tolist() == [0.0, 0.0]  # inf / inf, finite / inf
    assert np.isfinite(mk.softmax_in_format(scores, "bf16", subtract_max=False)).all()
    shifted = mk.softmax_in_format(scores, "fp16")
    np.testing.assert_allclose(shifted, mk.softmax(scores), rtol=2e-3, atol=1e-6)


def test_unknown_format():
    with pytest.raises(ValueError, match=r"^unknown float format 'fp4'; use one of \['fp32', 'bf16'"):
        mk.round_to_format(1.0, "fp4")


@FEW
@given(x=st.floats(-1e4, 1e4), cap=st.floats(0.5, 100.0))
def test_soft_cap_is_bounded_odd_and_its_derivative_is_right(x, cap):
    y = mk.soft_cap(x, cap)
    assert abs(y) <= cap and mk.soft_cap(-x, cap) == -y
    h = 1e-4 * cap
    numeric = (mk.soft_cap(x + h, cap) - mk.soft_cap(x - h, cap)) / (2 * h)
    assert mk.soft_cap_grad(x, cap) == pytest.approx(numeric, abs=1e-6)


def test_soft_cap_values():
    assert mk.soft_cap(0.0, 50.0) == 0.0
    assert mk.soft_cap(50.0, 50.0) == pytest.approx(50 * math.tanh(1))
    assert mk.soft_cap_grad(30.0, 30.0) == pytest.approx(1 - math.tanh(1) ** 2)  # about 0.42
    assert mk.soft_cap(1e9, 30.0) == 30.0


@pytest.mark.parametrize("bad", [0, -1.0, True, float("inf"), "50"])
def test_soft_cap_refuses_a_bad_cap(bad):
    with pytest.raises(ValueError, match=rf"^cap must be a positive finite number, got {bad!r}$"):
        mk.soft_cap(1.0, bad)
    with pytest.raises(ValueError, match=r"^cap must be"):
        mk.soft_cap_grad(1.0, bad)


def test_rms_norm_rows_have_length_sqrt_d_and_bound_the_scores():
    rng = np.random.default_rng(3)
    q, k = 100 * rng.normal(size=(5, 64)), rng.normal(size=(7, 64))
    qn, kn = mk.rms_norm(q, eps=0.0), mk.rms_norm(k, eps=0.0)
    np.testing.assert_allclose(np.linalg.norm(qn, axis=-1), 8.0)  # sqrt(64)
    scores = qn @ kn.T / np.sqrt(64)
    assert np.abs(scores).max() <= np.sqrt(64) + 1e-12  # Cauchy-Schwarz: |q.k| / sqrt(d_h) <= sqrt(d_h)


def test_rms_norm_weight():
    x = np.array([[3.0, 4.0]])
    np.testing.assert_allclose(mk.rms_norm(x, weight=np.array([1.0, 2.0]), eps=0.0), x / np.sqrt(12.5) * [1, 2])
    with pytest.raises(ValueError, match=r"^weight must have shape \(2,\) to match the last axis of x, got \(3,\)$"):
        mk.rms_norm(x, weight=np.ones(3))


def test_attention_entropy():
    assert mk.attention_entropy(np.zeros(8)) == pytest.approx(math.log(8))  # uniform over 8 keys
    assert mk.attention_entropy(np.array([0.0, 1e4, 0.0])) == 0.0  # one-hot
    assert mk.attention_entropy(np.zeros((2, 3, 4))).shape == (2, 3)
