"""mk.quantize_e4m3: FP8 E4M3 in numpy alone, against hand-worked values and ml_dtypes' own cast (quantize_kv)."""
import numpy as np
import pytest

import mha_kit as mk


def test_a_row_whose_largest_is_448_is_stored_as_e4m3_rounds_it():
    # amax 448: scale 1, so the values are E4M3's own roundings: 17 is a tie between 16 and 18 (to even: 16),
    # 19 one between 18 and 20 (to even: 20), 2^-10 half the smallest subnormal 2^-9 (to even: 0)
    values, scale = mk.quantize_e4m3(np.array([[448.0, 17.0, 19.0, 2.0**-10, -3.3]]), "tensor")
    assert scale.item() == 1.0
    assert values.tolist() == [[448.0, 16.0, 20.0, 0.0, -3.25]]


def test_the_scale_is_amax_over_448_per_group():
    x = np.array([[[1.0, -896.0], [2.0, 0.5]]])  # (h_kv=1, s=2, d_h=2)
    assert mk.quantize_e4m3(x, "tensor")[1].item() == 896.0 / 448.0
    assert mk.quantize_e4m3(x, "token")[1].ravel().tolist() == [2.0, 2.0 / 448.0]
    assert mk.quantize_e4m3(x, "channel")[1].ravel().tolist() == [2.0 / 448.0, 2.0]
    values, scale = mk.quantize_e4m3(np.zeros((1, 2, 3)), "token")  # a group of zeros keeps scale 1
    assert scale.ravel().tolist() == [1.0, 1.0] and not values.any()


@pytest.mark.parametrize("axis", ["tensor", "head", "token", "channel"])
def test_it_reads_back_what_ml_dtypes_cast_reads_back(axis):
    pytest.importorskip("ml_dtypes")  # the reference cast: absent on the browser's numpy 1.25 floor
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 40, 16)) * np.exp(rng.uniform(-12, 6, size=(3, 40, 16)))  # down into subnormals
    x[..., 5] *= 30  # an outlier channel
    values, scale = mk.quantize_e4m3(x, axis)
    codes, expected_scale = mk.quantize_kv_codes(x, "fp8_e4m3", axis)
    np.testing.assert_array_equal(scale, expected_scale)
    np.testing.assert_array_equal(values, mk.quantize_kv(x, "fp8_e4m3", axis))


def test_it_refuses_what_quantize_kv_refuses():
    with pytest.raises(ValueError, match=r"axis must be one of .*got 'row'"):
        mk.quantize_e4m3(np.ones((2, 3)), "row")
    with pytest.raises(ValueError, match=r"expected a cache of shape \(\.\.\., s, d_h\).*got \(3,\)"):
        mk.quantize_e4m3(np.ones(3))
    with pytest.raises(ValueError, match="cannot quantize a cache that contains NaN or inf"):
        mk.quantize_e4m3(np.array([[1.0, np.inf]]))
