"""common_mistakes-scale-one-over-d: dividing unit-variance dot products by d_h leaves a score std of 1/sqrt(d_h)."""

import numpy as np


def _one_over_d_rows(d_h=128, s=16):
    """Softmax rows of 1,000 random unit-variance queries against s keys each, the logits divided by d_h (and those logits)."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1000, d_h))
    k = rng.standard_normal((1000, s, d_h))
    scores = np.einsum("nd,nsd->ns", q, k) / d_h  # (n, s)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return scores, e / e.sum(-1, keepdims=True)


def test_one_over_d_std_and_near_uniform_rows():
    d_h, s = 128, 16
    scores, p = _one_over_d_rows(d_h, s)
    assert abs(scores.std() - 1 / np.sqrt(d_h)) < 0.01  # 0.088 at d_h = 128
    assert round(float(p.max(-1).mean()), 2) == 0.07  # the chapter's printed value
    assert p.max(-1).mean() < 2 / s  # near uniform (1/16 = 0.0625)


def test_mup_8_over_d_equals_one_over_sqrt_d_at_64():
    assert 8 / 64 == 1 / np.sqrt(64)


def test_one_over_d_softmax_jacobian_sits_at_the_uniform_rows():
    s = 16
    _, p = _one_over_d_rows(128, s)
    norms = [np.linalg.norm(np.diag(row) - np.outer(row, row)) for row in p]  # ||diag(p) - p p^T||_F per row
    # a uniform row: diagonal (s-1)/s^2, off-diagonal -1/s^2, so the norm is sqrt(s-1)/s
    assert f"{np.sqrt(s - 1) / s:.3f}" == "0.242"
    assert f"{np.median(norms):.3f}" == "0.243"  # the chapter's printed value
    assert abs(np.median(norms) - np.sqrt(s - 1) / s) < 0.005
