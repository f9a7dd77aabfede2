"""mha_kit.format_grids against hand-worked values: the E2M1 and INT4 grids on uniform data, block rounding."""
import numpy as np
import pytest

import mha_kit as mk

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6]) / 6  # OCP MX v1.0 FP4 E2M1 magnitudes over the largest


def test_e2m1_uniform_mse_is_a_third_of_the_range_per_step_size():
    # [0, 4/12] in steps of 1/12, [4/12, 8/12] in steps of 2/12, [8/12, 1] in one step of 4/12
    hand = (4 * (1 / 12) ** 3 + 2 * (2 / 12) ** 3 + (4 / 12) ** 3) / 12
    assert mk.uniform_rounding_mse(E2M1) == pytest.approx(hand, rel=1e-12)
    assert mk.uniform_rounding_mse(E2M1) == pytest.approx(21 / 5184, rel=1e-12)


def test_int4_uniform_mse_is_one_step_squared_over_twelve():
    assert mk.uniform_rounding_mse(np.arange(8) / 7) == pytest.approx((1 / 7) ** 2 / 12, rel=1e-12)


def test_the_closed_form_matches_rounding_samples():
    x = np.linspace(-1, 1, 200_001)
    for levels in (E2M1, np.arange(8) / 7):
        grid = np.concatenate([-levels[::-1], levels[1:]])
        rounded = grid[np.abs(x[:, None] - grid[None, :]).argmin(axis=1)]
        assert np.mean((x - rounded) ** 2) == pytest.approx(mk.uniform_rounding_mse(levels), rel=1e-3)


def test_round_blocks_hand_values():
    x = np.array([0.7, -0.32, 0.16, 0.0])  # one block: scale 0.1 for int4, codes 7, -3.2 -> -3, 1.6 -> 2, 0
    np.testing.assert_allclose(mk.round_blocks(x, "int4", 4), [0.7, -0.3, 0.2, 0.0])
    y = np.array([6.0, 2.6, -0.7, 0.2])  # scale 1 for e2m1: 2.6 -> 3, 0.7 -> 0.5, 0.2 -> 0
    np.testing.assert_allclose(mk.round_blocks(y, "e2m1", 4), [6.0, 3.0, -0.5, 0.0])
    z = np.array([[1.0, -1.0], [0.0, 0.0]])  # an all-zero block stays zero
    np.testing.assert_allclose(mk.round_blocks(z, "int8", 2), z)


def test_qsnr_db_hand_value_and_exact_input():
    assert mk.qsnr_db([3.0, 4.0], [3.0, 3.0]) == pytest.approx(10 * np.log10(25.0), rel=1e-12)
    assert mk.qsnr_db([1.0, 2.0], [1.0, 2.0]) == float("inf")


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="increase strictly from 0 to 1"):
        mk.uniform_rounding_mse([0, 0.5, 0.4, 1])
    with pytest.raises(ValueError, match="fmt must be one of"):
        mk.round_blocks(np.ones(4), "fp6", 4)
    with pytest.raises(ValueError, match="multiple of block=16"):
        mk.round_blocks(np.ones(20), "int4", 16)
    with pytest.raises(ValueError, match="same shape"):
        mk.qsnr_db(np.ones(3), np.ones(4))
