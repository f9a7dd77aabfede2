"""mha_kit.content_positions against Transformer-XL sec. 3.3 and CoPE sec. 3 (hand-worked values)."""
import numpy as np
import pytest

import mha_kit as mk


def test_xl_terms_sum_to_the_expanded_score():
    # (W_q E_i + [u or v])^T (W_kE E_j + W_kR R_{i-j}) expands into (a) + (b) + (c) + (d)
    rng = np.random.default_rng(1)
    n, dh = 5, 3
    q, kc, r, u, v = rng.normal(size=(n, dh)), rng.normal(size=(n, dh)), rng.normal(size=(n, dh)), \
        rng.normal(size=dh), rng.normal(size=dh)
    a, b, c, d = mk.xl_score_terms(q, kc, r, u, v)
    i, j = 4, 1
    assert a[i, j] + b[i, j] + c[i, j] + d[i, j] == pytest.approx(q[i] @ kc[j] + q[i] @ r[3] + u @ kc[j] + v @ r[3])
    assert c[0, 2] == pytest.approx(c[4, 2])  # (c) does not depend on the query


def test_cope_counts_open_gates():
    # keys 0, 2 give q.k = +50 (gate 1), keys 1, 3 give -50 (gate 0): from query 3, key 0 is at position 2
    q = np.array([[1.0, 0.0]] * 4)
    k = np.array([[50.0, 0.0], [-50.0, 0.0], [50.0, 0.0], [-50.0, 0.0]])
    p = mk.cope_positions(q, k)
    np.testing.assert_allclose(p[3], [2.0, 1.0, 1.0, 0.0], atol=1e-12)
    assert p[0, 1] == 0.0  # above the diagonal


def test_cope_gates_all_open_give_token_positions():
    q, k = np.ones((4, 1)), np.full((4, 1), 60.0)
    np.testing.assert_allclose(mk.cope_positions(q, k)[3], [4, 3, 2, 1], atol=1e-12)


def test_cope_logits_interpolate_between_integer_positions():
    q = np.array([[1.0, 2.0], [0.5, -1.0]])
    e = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    pos = np.array([[0.25, 0.0], [1.5, 7.0]])  # 7 is clipped to p_max = 2
    z = mk.cope_position_logits(q, pos, e)
    assert z[0, 0] == pytest.approx(0.75 * 0 + 0.25 * 1.0)
    assert z[1, 0] == pytest.approx(0.5 * 0.5 + 0.5 * -1.0)
    assert z[1, 1] == pytest.approx(-1.0)


def test_errors():
    with pytest.raises(ValueError, match="both be"):
        mk.cope_positions(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="positions"):
        mk.cope_position_logits(np.zeros((2, 3)), -np.ones((2, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="r must be"):
        mk.xl_score_terms(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((1, 3)), np.zeros(3), np.zeros(3))
