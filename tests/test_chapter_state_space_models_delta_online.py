"""The delta-rule-as-online-regression section of book/state_space_models.ipynb, recomputed."""
import numpy as np

import mha_kit as mk


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
    beta_unstable = 2.5 / (k @ k)  # beta ||k||^2 = 2.5 > 2: the error on the pair grows
    after = (S - beta_unstable * np.outer(before, k)) @ k - v
    assert np.linalg.norm(after) > np.linalg.norm(before)
    beta_safe = 1.5 / (k @ k)  # in (1, 2): it overshoots but shrinks
    after = (S - beta_safe * np.outer(before, k)) @ k - v
    assert np.linalg.norm(after) < np.linalg.norm(before) and after @ before < 0


def test_linear_attention_write_is_a_unit_step_on_the_inner_product():
    S, k, v = _pair(seed=5)
    eps = 1e-6
    grad = np.zeros_like(S)
    for i, j in np.ndindex(*S.shape):
        bump = np.zeros_like(S)
        bump[i, j] = eps
        grad[i, j] = (-(v @ (S + bump) @ k) + (v @ (S - bump) @ k)) / (2 * eps)
    assert np.allclose(S - grad, S + np.outer(v, k), atol=1e-6)


def test_gated_rule_is_a_step_from_the_decayed_state():
    # Gated DeltaNet (Yang et al. 2024, sec. 3.1): decay by alpha, then a delta step of size beta; non-unit key
    S, k, v = _pair(seed=6)
    alpha, beta = 0.9, 0.4
    _, state = mk.gated_delta_rule(k[None], k[None], v[None], np.array([alpha]), np.array([beta]), state=S)
    assert np.allclose(state, alpha * S - beta * np.outer(alpha * S @ k - v, k))


def test_linear_attention_is_the_proximal_minimiser():
    # GDN Table 1 (after Longhorn): argmin ||S - S_prev||_F^2 - 2 <S k, v> = S_prev + v k^T; the objective is
    # a convex quadratic, so the candidate must beat every perturbed state
    S_prev, k, v = _pair(seed=7)
    objective = lambda S: np.sum((S - S_prev) ** 2) - 2 * (v @ S @ k)  # noqa: E731
    best = S_prev + np.outer(v, k)
    bumps = np.random.default_rng(8).normal(scale=1e-2, size=(20, *S_prev.shape))
    assert all(objective(best + b) > objective(best) for b in bumps)


def test_transition_eigenvalues():
    # I - beta k k^T has eigenvalue 1 - beta ||k||^2 along k and 1 elsewhere
    _, k, _ = _pair(seed=9)
    beta = 1.96 / (k @ k)
    eig = np.linalg.eigvalsh(np.eye(k.size) - beta * np.outer(k, k))
    assert np.allclose(eig, [-0.96] + [1.0] * (k.size - 1))
