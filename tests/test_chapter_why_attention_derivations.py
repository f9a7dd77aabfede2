"""why_attention-derivations: the five derivations about one attention query, recomputed with plain numpy."""

import numpy as np


def _softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def test_gradient_wrt_query_is_key_covariance():
    # d2l Sec. 11.1 Ex. 2: d/dq sum_i p_i k_i = K^T (diag p - p p^T) K = Cov_p[k]
    rng = np.random.default_rng(1)
    K, q = rng.normal(size=(5, 3)), rng.normal(size=3)
    p = _softmax(K @ q)
    cov = sum(pi * np.outer(k, k) for pi, k in zip(p, K)) - np.outer(p @ K, p @ K)
    assert np.allclose(K.T @ (np.diag(p) - np.outer(p, p)) @ K, cov)
    h = 1e-6
    jac = np.column_stack([(_softmax(K @ (q + h * e)) @ K - _softmax(K @ (q - h * e)) @ K) / (2 * h) for e in np.eye(3)])
    assert np.allclose(jac, cov, atol=1e-6)


def test_gaussian_kernel_on_sphere_and_l2_scores():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(7, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    x = X[0] * 0.3 + X[1]
    x /= np.linalg.norm(x)
    w = np.exp(-0.5 * ((X - x) ** 2).sum(1))
    assert np.allclose(w / w.sum(), _softmax(X @ x))
    q, K = rng.normal(size=4) * 2, rng.normal(size=(7, 4))
    assert np.allclose(_softmax(-0.5 * ((q - K) ** 2).sum(1)), _softmax(K @ q - 0.5 * (K**2).sum(1)))


def test_average_of_two_and_cosine_bound():
    # q = beta (k_a + k_b): p_a = e^beta / (2 e^beta + m - 2)
    m = 6
    for beta, printed in ((2, 0.393), (5, 0.493), (10, 0.500)):
        pa = np.exp(beta) / (2 * np.exp(beta) + m - 2)
        assert round(pa, 3) == printed
    # cosine scores in [-1, 1]: max weight 1 / (1 + (m - 1) e^-2), at m = 1000 about 0.0073
    scores = np.full(1000, -1.0)
    scores[0] = 1.0
    assert round(_softmax(scores)[0], 4) == 0.0073
