"""mha_kit.conv against the defining sum, Lavin and Gray's F(2,3) and the multiply counts of their Sec. 4."""
import numpy as np
import pytest

import mha_kit as mk


def test_direct_matches_the_defining_sum():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((5, 6, 2)), rng.standard_normal((3, 2, 3, 2))
    y = mk.conv2d_direct(x, w)
    assert y.shape == (4, 4, 3)
    p, q, k = 2, 1, 2
    by_hand = sum(x[p + r, q + s, c] * w[k, r, s, c] for r in range(2) for s in range(3) for c in range(2))
    assert y[p, q, k] == pytest.approx(by_hand)


def test_im2col_gemm_equals_direct_and_copies_each_value_rs_times():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((8, 8, 4)), rng.standard_normal((5, 3, 3, 4))
    cols = mk.im2col(x, 3, 3)
    assert cols.shape == (36, 36)  # (6*6 outputs, 3*3*4 taps)
    np.testing.assert_allclose(cols @ w.reshape(5, -1).T, mk.conv2d_direct(x, w).reshape(36, 5), atol=1e-12)
    assert cols.size / x.size == pytest.approx(36 * 36 / 256)  # interior values appear 9 times


def test_winograd_f23_equals_direct_filtering():
    d, g = np.array([1.0, -2.0, 3.5, 4.0]), np.array([0.5, 2.0, -1.0])
    assert mk.winograd_f23(d, g) == pytest.approx([d[0:3] @ g, d[1:4] @ g])


def test_multiply_counts_and_halo():
    assert mk.winograd_multiplies(2, 3) == (16, 36)  # F(2x2, 3x3): 2.25x fewer
    assert mk.winograd_multiplies(4, 3) == (36, 144)  # F(4x4, 3x3): 4x fewer
    assert mk.halo_load_factor(16, 3) == 18 * 18 / 256
    assert mk.halo_load_factor(1, 3) == 9  # no tile: every output loads its 9 inputs


def test_rejects_bad_shapes():
    with pytest.raises(ValueError, match="same C"):
        mk.conv2d_direct(np.zeros((4, 4, 2)), np.zeros((1, 3, 3, 3)))
    with pytest.raises(ValueError, match="larger than the input"):
        mk.conv2d_direct(np.zeros((2, 2, 1)), np.zeros((1, 3, 3, 1)))
    with pytest.raises(ValueError, match="H >= r"):
        mk.im2col(np.zeros((2, 2, 1)), 3, 3)
    with pytest.raises(ValueError, match="4 inputs and 3 taps"):
        mk.winograd_f23([1, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match="m must be a positive integer"):
        mk.winograd_multiplies(0, 3)
