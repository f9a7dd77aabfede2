"""The near-uniform-attention section of book/common_mistakes.ipynb, recomputed without mha_kit."""
import numpy as np


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _entropy_ratio(w, n):
    return float((-(w * np.log(w)).sum(axis=-1) / np.log(n)).mean())


def test_fingerprints():
    rng = np.random.default_rng(4)
    n, d = 256, 64
    q, k = rng.normal(size=(2, n, d))
    s = q @ k.T
    assert round(float((s / np.sqrt(d)).std()), 3) == 0.997
    assert round(_entropy_ratio(_softmax(s / np.sqrt(d)), n), 3) == 0.911
    for scores in (s / d, (0.1 * q) @ (0.1 * k).T / np.sqrt(d)):
        assert _entropy_ratio(_softmax(scores), n) > 0.99
    qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
    kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
    assert np.abs(qn @ kn.T).max() <= 1.0 + 1e-12  # a cosine score is bounded by 1
    assert _entropy_ratio(_softmax(qn @ kn.T), n) > 0.99
    wrong = _softmax(s / np.sqrt(d), axis=0)  # normalised over queries
    assert np.allclose(wrong.sum(axis=0), 1.0) and round(float(np.abs(wrong.sum(axis=-1) - 1).max()), 2) == 0.52
