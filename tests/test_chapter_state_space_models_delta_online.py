"""The delta-rule-as-online-regression section of book/state_space_models.ipynb, recomputed."""
import numpy as np


def _pair(seed=3, dk=5, dv=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(dv, dk)), rng.normal(size=dk), rng.normal(size=dv)


def test_gradient_step_is_the_transition_form():
    # S - beta (S k - v) k^T = S (I - beta k k^T) + beta v k^T (Yang et al. 2024, sec. 2.2; GDN sec. 3.1)
    S, k, v = _pair()
    for beta in (0.3, 1.0):
        step = S - beta * np.outer(S @ k - v, k)
        transition = S @ (np.eye(k.size) - beta * np.outer(k, k)) + beta * np.outer(v, k)
        assert np.allclose(step, transition)


def test_error_left_scales_by_one_minus_beta_k_squared():
    S, k, v = _pair(seed=4)
    before = S @ k - v
    for beta in (0.1, 0.5, 1.0, 2.5):
        after = (S - beta * np.outer(before, k)) @ k - v
        assert np.allclose(after, (1 - beta * (k @ k)) * before)
    beta_unstable = 2.5 / (k @ k)  # beta ||k||^2 = 2.5 > 2: the error grows
    assert abs(1 - beta_unstable * (k @ k)) > 1


def test_linear_attention_write_is_a_unit_step_on_the_inner_product():
    S, k, v = _pair(seed=5)
    eps = 1e-6
    grad = np.zeros_like(S)
    for i, j in np.ndindex(*S.shape):
        bump = np.zeros_like(S)
        bump[i, j] = eps
        grad[i, j] = (-(v @ (S + bump) @ k) + (v @ (S - bump) @ k)) / (2 * eps)
    assert np.allclose(S - grad, S + np.outer(v, k), atol=1e-6)
