"""Low-precision KV cache: FP8 against ml_dtypes' own numbers, integer ranges, scale groups, errors."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

FP8 = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}
MANTISSA_BITS = {"fp8_e4m3": 3, "fp8_e5m2": 2}
SUBNORMAL_STEP = {"fp8_e4m3": 2.0**-9, "fp8_e5m2": 2.0**-16}  # OCP FP8: 2^(1 - bias - m)


def representable(fmt):
    """Every finite value of an FP8 format, from its 256 bit patterns, ascending."""
    values = np.arange(256, dtype=np.uint8).view(FP8[fmt]).astype(np.float64)
    return np.unique(values[np.isfinite(values)])


# ---------------------------------------------------------------------------------------------
# Agreement with ml_dtypes
# ---------------------------------------------------------------------------------------------

def test_largest_finite_values_are_448_and_57344():
    assert mk.KV_FORMAT_MAX["fp8_e4m3"] == 448.0 == float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
    assert mk.KV_FORMAT_MAX["fp8_e5m2"] == 57344.0 == float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).max)
    assert representable("fp8_e4m3")[-1] == 448.0 and representable("fp8_e5m2")[-1] == 57344.0


@pytest.mark.parametrize("fmt", sorted(FP8))
def test_every_representable_value_round_trips_exactly(fmt):
    # The format's maximum is in the row, so the scale is exactly 1 and every value is stored as itself.
    values = representable(fmt)
    np.testing.assert_array_equal(mk.quantize_kv(values[None, :], fmt, "tensor"), values[None, :])
    codes, scale = mk.quantize_kv_codes(values[None, :], fmt, "tensor")
    assert codes.dtype == np.dtype(FP8[fmt]) and scale.item() == 1.0


@pytest.mark.parametrize("fmt", sorted(FP8))
def test_fp8_rounds_to_the_nearest_representable_value(fmt):
    grid = representable(fmt)
    top = mk.KV_FORMAT_MAX[fmt]
    x = np.random.default_rng(0).uniform(-top, top, size=(4, 64))
    x[0, 0] = top  # scale 1: what is stored is the format's own rounding of x
    nearest = grid[np.abs(x[..., None] - grid).argmin(axis=-1)]
    np.testing.assert_array_equal(mk.quantize_kv(x, fmt, "tensor"), nearest)


@settings(max_examples=30, deadline=None)
@given(fmt=st.sampled_from(sorted(mk.KV_FORMAT_MAX)), axis=st.sampled_from(sorted(mk.SCALE_AXES)),
       spread=st.floats(1e-3, 1e3), seed=st.integers(0, 99))
def test_error_bounds_per_format(fmt, axis, spread, seed):
    x = spread * np.random.default_rng(seed).standard_normal((2, 6, 8))
    codes, scale = mk.quantize_kv_codes(x, fmt, axis)
    err = np.abs(mk.quantize_kv(x, fmt, axis) - x)
    scale = np.broadcast_to(scale, x.shape)
    if fmt in FP8:  # half a step: 2^-(m+1) of the number, or half the subnormal step near zero
        bound = np.maximum(np.abs(x) * 2.0 ** -(MANTISSA_BITS[fmt] + 1), scale * SUBNORMAL_STEP[fmt] / 2)
    else:  # half an integer step
        bound = scale / 2
    assert (err <= bound * (1 + 1e-12)).all()


# ---------------------------------------------------------------------------------------------
# Integers and scale groups
# ---------------------------------------------------------------------------------------------

def test_int4_codes_span_minus_7_to_7_and_keep_zero():
    x = np.array([[[-3.5, -1.0, 0.0, 0.5, 3.5]]])
    codes, scale = mk.quantize_kv_codes(x, "int4", "token")
    assert codes.dtype == np.int8 and scale.item() == 0.5
    np.testing.assert_array_equal(codes, [[[-7, -2, 0, 1, 7]]])
    np.testing.assert_array_equal(mk.quantize_kv(x, "int4", "token"), [[[-3.5, -1.0, 0.0, 0.5, 3.5]]])


def test_integer_rounding_is_to_nearest_even():
    codes, _ = mk.quantize_kv_codes(np.array([[7.0, 3.5, 2.5, -0.5]]), "int4", "token")  # scale 1
    np.testing.assert_array_equal(codes, [[7, 4, 2, 0]])


def test_scale_groups_follow_the_axis():
    x = np.array([[[1.0, 20.0], [4.0, -10.0], [-2.0, 5.0]]])  # (h_kv=1, s=3, d_h=2)
    _, per_token = mk.quantize_kv_codes(x, "int8", "token")
    _, per_channel = mk.quantize_kv_codes(x, "int8", "channel")
    _, per_head = mk.quantize_kv_codes(x, "int8", "head")
    np.testing.assert_allclose(per_token, np.array([[[20.0], [10.0], [5.0]]]) / 127)
    np.testing.assert_allclose(per_channel, np.array([[[4.0, 20.0]]]) / 127)
    np.testing.assert_allclose(per_head, np.array([[[20.0]]]) / 127)


def test_a_group_of_zeros_gets_scale_one_and_stays_zero():
    x = np.zeros((2, 3, 4))
    x[1, 0, 0] = 7.0  # scale 7 / 448 = 1/64, exact in binary
    codes, scale = mk.quantize_kv_codes(x, "fp8_e4m3", "head")
    assert scale[0].item() == 1.0 and scale[1].item() == 1 / 64
    np.testing.assert_array_equal(mk.quantize_kv(x, "fp8_e4m3", "head"), x)


def test_per_head_int8_is_the_same_quantizer():
    x = np.random.default_rng(1).standard_normal((3, 5, 4)) * [[[1.0]], [[30.0]], [[0.01]]]
    q, scale = mk.quantize_per_head(x)
    np.testing.assert_array_equal(mk.dequantize_per_head(q, scale), mk.quantize_kv(x, "int8", "head"))


def test_per_channel_keys_win_on_an_integer_grid_over_an_outlier_channel():
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((4, 8, 16)), rng.standard_normal((2, 64, 16)), rng.standard_normal((2, 64, 16))
    k[:, :, 3] *= 20  # one channel of every key is 20 times larger than the others
    for fmt in ("int4", "int8"):  # keys alone: one scale per token is set by the outlier and crushes the rest
        per_channel = mk.attention_error(q, k, v, fmt, k_axis="channel", v_axis=None)
        per_token = mk.attention_error(q, k, v, fmt, k_axis="token", v_axis=None)
        assert per_token > 2 * per_channel
    assert mk.attention_error(q, k, v, "int8") < mk.attention_error(q, k, v, "int4")
    assert mk.attention_error(q, k, v, "fp8_e4m3") < mk.attention_error(q, k, v, "fp8_e5m2")
    assert mk.attention_error(q, k, v, "int4", k_axis=None, v_axis=None) == 0.0


@pytest.mark.parametrize(
    "shape, axis, count",
    [
        ((8, 1000, 128), "token", 8000),  # one per token per KV head
        ((8, 1000, 128), "channel", 1024),  # one per channel per KV head
        ((8, 1000, 128), "head", 8),
        ((8, 1000, 128), "tensor", 1),
        ((1000, 128), "token", 1000),  # one head without a head axis
    ],
)
def test_scale_count(shape, axis, count):
    assert mk.kv_scale_count(shape, axis) == count
    assert type(mk.kv_scale_count(shape, axis)) is int


def test_fp8_names_have_8_bits_in_the_dtype_table():
    cfg = mk.PRESETS["llama-3-70b"]
    assert mk.dtype_bits("fp8_e4m3") == mk.dtype_bits("fp8_e5m2") == 8
    assert mk.kv_cache_bytes(cfg, 1000, fmt="fp8_e4m3") * 2 == mk.kv_cache_bytes(cfg, 1000)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "x, fmt, axis, message",
    [
        (np.ones((2, 3)), "fp4", "token", r"^fmt must be one of \['fp8_e4m3', 'fp8_e5m2', 'int4', 'int8'\], got 'fp4'$"),
        (np.ones((2, 3)), "int8", "row", r"^axis must be one of \['channel', 'head', 'tensor', 'token'\], got 'row'$"),
        (np.ones(3), "int8", "token", r"^expected a cache of shape \(\.\.\., s, d_h\) with at least one token, got \(3,\)$"),
        (np.ones((2, 0, 3)), "int8", "token", r"^expected a cache of shape \(\.\.\., s, d_h\) with at least one token, got \(2, 0, 3\)$"),
        (np.ones((2, 2), complex), "int8", "token", r"^expected a real-valued cache, got dtype complex128$"),
        (np.array([[1.0, np.inf]]), "fp8_e5m2", "token", r"^cannot quantize a cache that contains NaN or inf$"),
    ],
)
def test_quantize_errors(x, fmt, axis, message):
    with pytest.raises(ValueError, match=message):
        mk.quantize_kv(x, fmt, axis)


def test_scale_count_errors():
    with pytest.raises(ValueError, match=r"^expected a shape \(\.\.\., s, d_h\) with every size at least 1, got \(4,\)$"):
        mk.kv_scale_count((4,), "token")
    with pytest.raises(ValueError, match=r"^axis must be one of \['channel', 'head', 'tensor', 'token'\], got 'rows'$"):
        mk.kv_scale_count((4, 4), "rows")
