"""Tests for mha_kit.attention_design against the sources' formulas.

Tied projections: X W W^T X^T is symmetric positive semi-definite. Bahdanau et al. 2015, eq. 6:
e_ij = v^T tanh(W q_i + U k_j). Vaswani et al. 2017, Table 1. Ramapuram et al. 2024: sigmoid
attention with b = -ln(n). Martins and Astudillo 2016, Algorithm 1 (sparsemax) and their worked
property: sparsemax is the Euclidean projection onto the simplex.
"""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_tied_scores_symmetric_psd_separate_not():
    rng = np.random.default_rng(0)
    x, w_q, w_k = rng.standard_normal((6, 8)), rng.standard_normal((8, 4)), rng.standard_normal((8, 4))
    tied = mk.bilinear_scores(x, w_q)
    np.testing.assert_allclose(tied, tied.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(tied).min() > -1e-9  # positive semi-definite
    assert (np.diag(tied) >= 0).all()
    assert (tied <= np.sqrt(np.outer(np.diag(tied), np.diag(tied))) + 1e-9).all()  # Cauchy-Schwarz
    separate = mk.bilinear_scores(x, w_q, w_k)
    assert not np.allclose(separate, separate.T)
    np.testing.assert_allclose(separate, (x @ w_q) @ (x @ w_k).T, rtol=1e-12)


def test_bilinear_errors():
    with pytest.raises(ValueError, match="expected w_q and w_k"):
        mk.bilinear_scores(np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="2 dimensions"):
        mk.bilinear_scores(np.ones(3), np.ones((3, 2)))


def test_additive_matches_the_loop():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((3, 4)), rng.standard_normal((5, 6))
    w_1, w_2, v_a = rng.standard_normal((4, 7)), rng.standard_normal((6, 7)), rng.standard_normal(7)
    expected = np.array([[v_a @ np.tanh(q_i @ w_1 + k_j @ w_2) for k_j in k] for q_i in q])
    np.testing.assert_allclose(mk.additive_scores(q, k, w_1, w_2, v_a), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="expected w_1"):
        mk.additive_scores(q, k, w_2, w_1, v_a)


def test_score_flops():
    assert mk.score_flops("dot", 10, 20, 64) == 2 * 10 * 20 * 64
    # projections 2 (n + s) d_h d_a, then 4 per pair and hidden unit
    assert mk.score_flops("additive", 10, 20, 64) == 2 * 30 * 64 * 64 + 4 * 10 * 20 * 64
    assert mk.score_flops("additive", 10, 20, 64, d_a=32) == 2 * 30 * 64 * 32 + 4 * 10 * 20 * 32
    with pytest.raises(ValueError, match="kind must be"):
        mk.score_flops("cosine", 1, 1, 1)


@pytest.mark.parametrize("layer, expected", [
    ("self-attention", {"ops": 100**2 * 8, "sequential": 1, "path": 1}),
    ("recurrent", {"ops": 100 * 8**2, "sequential": 100, "path": 100}),
    ("convolutional", {"ops": 3 * 100 * 8**2, "sequential": 1, "path": 5}),  # 3**4 = 81 < 100 <= 243
    ("restricted self-attention", {"ops": 10 * 100 * 8, "sequential": 1, "path": 10}),
])
def test_table_1(layer, expected):
    assert mk.layer_complexity(layer, 100, 8, kernel_size=3, neighbourhood=10) == expected


def test_table_1_exact_power_and_errors():
    assert mk.layer_complexity("convolutional", 81, 8, kernel_size=3)["path"] == 4  # log_3 81 = 4, not 5
    with pytest.raises(ValueError, match="layer must be one of"):
        mk.layer_complexity("lstm", 10, 8)
    with pytest.raises(ValueError, match="kernel_size must be at least 2"):
        mk.layer_complexity("convolutional", 10, 8, kernel_size=1)
    with pytest.raises(ValueError, match="neighbourhood"):
        mk.layer_complexity("restricted self-attention", 10, 8)


def test_sigmoid_attention():
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((8, 4)), rng.standard_normal((8, 4))
    out, w = mk.sigmoid_attention(q, k, v)
    expected = 1 / (1 + np.exp(-(q @ k.T / 2 - math.log(8))))
    np.testing.assert_allclose(w, expected, rtol=1e-12)
    np.testing.assert_allclose(out, expected @ v, rtol=1e-12)
    zero_scores = mk.sigmoid_attention(np.zeros((1, 4)), k, v)[1]
    np.testing.assert_allclose(zero_scores.sum(), 8 / 9, rtol=1e-12)  # each 1 / (1 + 8): about one in all
    with pytest.raises(ValueError, match="expected q"):
        mk.sigmoid_attention(q, k[:, :3], v)


def test_sparsemax():
    np.testing.assert_allclose(mk.sparsemax([1.0, 2.0, 3.0]), [0, 0, 1])
    np.testing.assert_allclose(mk.sparsemax([0.0, 0.5, 0.6]), [0, 0.45, 0.55])  # tau = 0.05
    z = np.random.default_rng(3).standard_normal((5, 7))
    p = mk.sparsemax(z)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-12)
    assert (p >= 0).all()
    # the Euclidean projection onto the simplex: no other point of the simplex is closer
    for row, zr in zip(p, z):
        other = np.random.default_rng(4).dirichlet(np.ones(7), size=200)
        assert ((other - zr) ** 2).sum(axis=1).min() >= ((row - zr) ** 2).sum() - 1e-12
    with pytest.raises(ValueError, match="finite"):
        mk.sparsemax([np.inf, 1.0])
