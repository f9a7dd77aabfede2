"""Claims recomputed independently: the MoE calibration rank-deficiency threshold (weight_quantization), QuaRot's
split of the W_o Hadamard into a foldable per-head part and an online cross-head part, and the offset-free streaming
entropy update (softmax_numerics)."""
import numpy as np

import mha_kit as mk


def sylvester(n):
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n)


def test_moe_rank_deficient_share():
    f = mk.MODEL_FACTS["deepseek-v3"]
    mean_tokens = 128 * 2048 * 8 // 256
    assert mean_tokens == 8192 and f.config.d_model == 7168
    assert 7168 / 8192 == 0.875 and f"{7168 / 8192:.1%}" == "87.5%"


def test_wo_hadamard_splits_into_head_and_cross_head_parts():
    n_h, d_h, t = 4, 8, 5
    h_full = sylvester(n_h * d_h)
    per_head = np.kron(np.eye(n_h), sylvester(d_h))  # I (x) H_dh, folds into W_v
    across = np.kron(sylvester(n_h), np.eye(d_h))  # H_nh (x) I, runs online
    assert np.allclose(h_full, across @ per_head)
    rng = np.random.default_rng(0)
    v = rng.normal(size=(t, n_h * d_h))  # (tokens, heads * head_dim)
    p = rng.dirichlet(np.ones(t), size=(n_h, t))  # (heads, queries, keys): each head its own softmax

    def attend(vals):
        heads = vals.reshape(t, n_h, d_h).transpose(1, 0, 2)  # (heads, keys, head_dim)
        return np.einsum("hqk,hkd->qhd", p, heads).reshape(t, n_h * d_h)

    assert np.allclose(attend(v @ per_head), attend(v) @ per_head)  # inside a head: commutes
    assert not np.allclose(attend(v @ across), attend(v) @ across)  # mixing heads: does not


def test_offset_free_streaming_entropy():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 3, size=1000) + 95.0
    m, s, tp = -np.inf, 0.0, 0.0
    for chunk in np.split(x, 10):
        m_new = max(m, chunk.max())
        if np.isfinite(m):
            s, tp = np.exp(m - m_new) * s, np.exp(m - m_new) * (tp + (m - m_new) * s)
        e = np.exp(chunk - m_new)
        s, tp, m = s + e.sum(), tp + ((chunk - m_new) * e).sum(), m_new
    p = np.exp(x - x.max())
    p /= p.sum()
    assert np.isclose(np.log(s) - tp / s, -(p * np.log(p)).sum(), rtol=0, atol=1e-10)
