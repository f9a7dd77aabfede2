"""Attention backward from the stored log-sum-exp (Dao 2023, FlashAttention-2, Algorithm 2) and the
per-token forward FLOP split (two FLOPs per multiply-add, Kaplan et al. 2020 Table 1's convention)."""
import numpy as np
import pytest

import mha_kit as mk


def _inputs(n=11, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, d)) for _ in range(4))  # q, k, v, d_o


def test_dense_gradient_matches_finite_differences():
    q, k, v, d_o = _inputs(n=5, d=3)
    loss = lambda q_, k_, v_: float((mk.attention_forward_lse(q_, k_, v_, causal=True)[0] * d_o).sum())  # noqa: E731
    grads = mk.attention_backward_dense(q, k, v, d_o, causal=True)
    eps = 1e-6
    for which, grad in enumerate(grads):
        args = [q, k, v]
        for idx in [(0, 0), (2, 1), (4, 2)]:
            plus, minus = [a.copy() for a in args], [a.copy() for a in args]
            plus[which][idx] += eps
            minus[which][idx] -= eps
            numeric = (loss(*plus) - loss(*minus)) / (2 * eps)
            assert grad[idx] == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("block", [1, 4, 16])
def test_flash_backward_equals_dense(causal, block):
    q, k, v, d_o = _inputs()
    o, lse = mk.attention_forward_lse(q, k, v, causal=causal)
    flash = mk.flash_attention_backward(q, k, v, o, lse, d_o, block_size=block, causal=causal)
    for got, want in zip(flash, mk.attention_backward_dense(q, k, v, d_o, causal=causal)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_d_is_the_row_sum_of_p_times_dp():
    q, k, v, d_o = _inputs()
    o, lse = mk.attention_forward_lse(q, k, v)
    p = np.exp(q @ k.T / 2.0 - lse[:, None])  # d = 4, scale 1/2
    np.testing.assert_allclose((p * (d_o @ v.T)).sum(axis=1), (d_o * o).sum(axis=1), rtol=1e-12)


def test_lse_is_log_of_row_sums():
    q, k, v, _ = _inputs(n=3, d=4)
    _, lse = mk.attention_forward_lse(q, k, v)
    np.testing.assert_allclose(lse, np.log(np.exp(q @ k.T / 2.0).sum(axis=1)), rtol=1e-12)


def test_errors_name_the_rule():
    q, k, v, d_o = _inputs()
    with pytest.raises(ValueError, match="same d"):
        mk.attention_backward_dense(q, k[:, :3], v[:, :3], d_o)
    with pytest.raises(ValueError, match="n_q == n_k"):
        mk.attention_forward_lse(q[:5], k, v, causal=True)
    o, lse = mk.attention_forward_lse(q, k, v)
    with pytest.raises(ValueError, match="lse shape"):
        mk.flash_attention_backward(q, k, v, o, lse[:4], d_o)
    with pytest.raises(ValueError, match="block_size"):
        mk.flash_attention_backward(q, k, v, o, lse, d_o, block_size=0)


def test_gpt2_small_split_by_hand():
    d, layers, n, vocab = 768, 12, 1024, 50257  # GPT-2 small (Radford et al. 2019, Table 2)
    got = mk.forward_flops_per_token(d, layers, 4 * d, n, vocab=vocab)
    assert got == {"projections": 12 * 8 * 768 * 768, "attention": 12 * 4 * 1024 * 768,
                   "ffn": 12 * 16 * 768 * 768, "lm_head": 2 * 768 * 50257}
    total = sum(got.values())
    assert round(got["lm_head"] / total, 2) == 0.27 and round(got["ffn"] / total, 2) == 0.40


def test_gqa_widths_and_causal_mean():
    got = mk.forward_flops_per_token(8192, 1, 28672, 8, d_kv=1024, ffn_matrices=3, causal_mean=True)
    assert got["projections"] == 2 * (2 * 8192 * 8192 + 2 * 8192 * 1024)
    assert got["attention"] == 4 * 4.5 * 8192  # keys 1..8 average 4.5
    assert got["ffn"] == 6 * 8192 * 28672 and got["lm_head"] == 0


def test_flop_split_errors():
    with pytest.raises(ValueError, match="ffn_matrices must be 2 or 3"):
        mk.forward_flops_per_token(8, 1, 32, 4, ffn_matrices=4)
    with pytest.raises(ValueError, match="n_ctx"):
        mk.forward_flops_per_token(8, 1, 32, 0)
