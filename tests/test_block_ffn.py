"""mha_kit.swiglu_ffn against Shazeer 2020, sec. 2: (silu(x W) * x V) W_2, applied row by row."""
import numpy as np
import pytest

import mha_kit as mk


def test_one_token_by_hand():
    # d = 1, d_ff = 2: gate = [1, -1], up = [2, 3], silu(1) = 1/(1+e^-1), silu(-1) = -1/(1+e)
    x = np.array([[1.0]])
    w_gate, w_up, w_down = np.array([[1.0, -1.0]]), np.array([[2.0, 3.0]]), np.array([[1.0], [1.0]])
    silu_1, silu_m1 = 1 / (1 + np.exp(-1.0)), -1 / (1 + np.exp(1.0))
    assert mk.swiglu_ffn(x, w_gate, w_up, w_down)[0, 0] == pytest.approx(2 * silu_1 + 3 * silu_m1)


def test_position_wise_and_permutation():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4))
    w = [rng.standard_normal((4, 6)), rng.standard_normal((4, 6)), rng.standard_normal((6, 4))]
    whole = mk.swiglu_ffn(x, *w)
    rows = np.vstack([mk.swiglu_ffn(x[i:i + 1], *w) for i in range(5)])  # one token at a time
    assert np.allclose(whole, rows)
    perm = [3, 0, 4, 1, 2]
    assert np.allclose(mk.swiglu_ffn(x[perm], *w), whole[perm])


@pytest.mark.parametrize("shapes, match", [
    (((3,), (4, 6), (4, 6), (6, 4)), "x of shape"),
    (((3, 4), (4, 6), (4, 5), (6, 4)), "w_gate and w_up"),
    (((3, 4), (5, 6), (5, 6), (6, 4)), "w_gate and w_up"),
    (((3, 4), (4, 6), (4, 6), (6, 3)), "w_down must be"),
])
def test_errors(shapes, match):
    arrays = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError, match=match):
        mk.swiglu_ffn(*arrays)
