"""notation-nn-linear: nn.Linear's layout and initial scale against torch.rand's (torch/nn/modules/linear.py)."""
import numpy as np


def test_transpose_copy_matches():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 12)), rng.uniform(0, 1, (12, 5))  # w used as x @ w
    weight = w.T  # nn.Linear layout (out, in); forward is x @ weight.T
    assert weight.shape == (5, 12)
    assert np.allclose(x @ w, x @ weight.T)


def test_output_scale_sqrt_din_over_3_against_one_over_sqrt3():
    d_in = 768
    # Var of a U(0,1) weight is 1/12 and its mean 1/2, so E[w^2] = 1/3; for U(-b, b) with b = 1/sqrt(d_in), b^2/3.
    assert np.isclose(np.sqrt(d_in * (1 / 12 + 1 / 4)), np.sqrt(d_in / 3))
    assert np.isclose(np.sqrt(d_in * (1 / d_in) / 3), 1 / np.sqrt(3))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, d_in))
    assert abs(np.std(x @ rng.uniform(0, 1, (d_in, 64))) / np.sqrt(d_in / 3) - 1) < 0.1
    b = 1 / np.sqrt(d_in)
    assert abs(np.std(x @ rng.uniform(-b, b, (d_in, 64))) * np.sqrt(3) - 1) < 0.1
