"""HiPPO-LegS, the decayed linear-attention family, Lightning Attention-2 and linear attention's normaliser.

Each function is checked against its primary source: HiPPO-LegS's matrix entry by entry against the
formula of Gu et al. 2020 (sec. 3) / S4 (eq. 2); RetNet's recurrent form against its parallel form
``(Q K^T . D) V`` (Sun et al. 2023, sec. 2.1); GLA's gated recurrence against a loop that forms
``Diag(alpha_t)`` (Yang et al. 2024, sec. 4.1); Lightning Attention-2's blocks against causal linear
attention (Qin et al. 2024, sec. 3); the normaliser Jacobians against finite differences.
"""
import numpy as np
import pytest

import mha_kit as mk


def test_hippo_legs_matches_the_formula_entry_by_entry():
    A, B = mk.hippo_legs(5)
    for n in range(5):
        assert B[n] == pytest.approx(np.sqrt(2 * n + 1))
        for k in range(5):
            expected = -np.sqrt(2 * n + 1) * np.sqrt(2 * k + 1) if n > k else (-(n + 1) if n == k else 0.0)
            assert A[n, k] == pytest.approx(expected)
    assert A[2, 1] == pytest.approx(-np.sqrt(15))  # hand-worked: -sqrt(5) sqrt(3)
    assert np.array_equal(np.diag(A), -np.arange(1.0, 6.0))  # S4D-Real / Mamba's A is this diagonal


def test_hippo_legs_plus_rank_one_is_normal():
    # S4 sec. 3.2: A + P P^T with P_n = sqrt(n + 1/2) is -I/2 plus a skew-symmetric matrix
    A, _ = mk.hippo_legs(16)
    P = np.sqrt(np.arange(16) + 0.5)
    M = A + np.outer(P, P)
    assert np.allclose(M + M.T, -np.eye(16))
    assert np.allclose(M @ M.T, M.T @ M)


def test_hippo_legs_memory_reconstructs_the_whole_history():
    L = 1000
    t = np.arange(L) / L
    f = np.sin(12 * t) + 0.5 * np.cos(31 * t)
    c = mk.hippo_legs_memory(f, 32)
    x = (np.arange(L) + 0.5) / L
    error = np.sqrt(np.mean((mk.hippo_legs_reconstruct(c[-1], x) - f) ** 2) / np.mean(f ** 2))
    assert error < 0.03
    few = mk.hippo_legs_memory(f, 4)  # four coefficients cannot hold this history
    assert np.sqrt(np.mean((mk.hippo_legs_reconstruct(few[-1], x) - f) ** 2) / np.mean(f ** 2)) > 0.3


def test_hippo_legs_memory_of_a_constant_tends_to_its_legendre_coefficients():
    # a constant is the 0th Legendre polynomial: the dynamics' fixed point is c = f e_0, since A e_0 = -B
    A, B = mk.hippo_legs(6)
    assert np.allclose(A[:, 0], -B)
    c = mk.hippo_legs_memory(np.full(2000, 2.0), 6)
    assert np.allclose(c[-1], [2.0, 0, 0, 0, 0, 0], atol=5e-3)
    assert np.abs(c[-1] - [2.0, 0, 0, 0, 0, 0]).max() < np.abs(c[99] - [2.0, 0, 0, 0, 0, 0]).max()


def test_hippo_errors():
    with pytest.raises(ValueError, match="state_size"):
        mk.hippo_legs(0)
    with pytest.raises(ValueError, match="one sequence"):
        mk.hippo_legs_memory(np.zeros((3, 2)), 4)
    with pytest.raises(ValueError, match=r"x lie in \[0, 1\]"):
        mk.hippo_legs_reconstruct(np.ones(3), np.array([0.5, 1.5]))


@pytest.fixture
def qkv():
    rng = np.random.default_rng(7)
    return rng.normal(size=(3, 24, 6))


def test_retnet_recurrence_equals_its_parallel_form(qkv):
    q, k, v = qkv
    gamma = 1 - 2.0 ** -5  # RetNet's first head (sec. 2.2)
    n = q.shape[0]
    D = np.where(np.arange(n)[:, None] >= np.arange(n), gamma ** (np.arange(n)[:, None] - np.arange(n)), 0.0)
    assert np.allclose(mk.decayed_linear_attention(q, k, v, gamma), ((q @ k.T) * D) @ v, rtol=1e-12, atol=1e-12)


def test_gla_recurrence_equals_a_loop_with_the_diagonal_gate(qkv):
    q, k, v = qkv
    alpha = np.random.default_rng(1).uniform(0.7, 1.0, size=q.shape)
    S, out = np.zeros((q.shape[1], v.shape[1])), []
    for t in range(q.shape[0]):
        S = np.diag(alpha[t]) @ S + np.outer(k[t], v[t])  # GLA sec. 4.1: G_t = alpha_t^T 1 on the state
        out.append(q[t] @ S)
    for form in ("recurrent", "parallel"):
        assert np.allclose(mk.decayed_linear_attention(q, k, v, alpha, form), out, rtol=1e-10, atol=1e-10)


def test_a_gate_of_ones_is_plain_causal_linear_attention(qkv):
    q, k, v = qkv
    plain = np.tril(q @ k.T) @ v
    assert np.allclose(mk.decayed_linear_attention(q, k, v, np.ones(q.shape[0])), plain)


def test_decayed_linear_attention_errors(qkv):
    q, k, v = qkv
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        mk.decayed_linear_attention(q, k, v, 1.5)
    with pytest.raises(ValueError, match="gate must be"):
        mk.decayed_linear_attention(q, k, v, np.ones(5))
    with pytest.raises(ValueError, match="same n"):
        mk.decayed_linear_attention(q, k[:3], v, 0.9)


@pytest.mark.parametrize("decay", [1.0, 0.95])
@pytest.mark.parametrize("block", [1, 4, 24])
def test_lightning_attention_equals_causal_linear_attention(qkv, decay, block):
    q, k, v = qkv
    expected = mk.decayed_linear_attention(q, k, v, decay, "parallel")
    assert np.allclose(mk.lightning_attention(q, k, v, block, decay), expected, rtol=1e-12, atol=1e-12)


def test_lightning_attention_errors(qkv):
    q, k, v = qkv
    with pytest.raises(ValueError, match="must divide n"):
        mk.lightning_attention(q, k, v, 5)
    with pytest.raises(ValueError, match="decay"):
        mk.lightning_attention(q, k, v, 4, 0.0)


def test_normaliser_jacobians_match_finite_differences():
    rng = np.random.default_rng(3)
    for kind, s in (("softmax", rng.normal(size=6)), ("linear", rng.uniform(0.1, 1.0, size=6))):
        def row(x):
            return np.exp(x) / np.exp(x).sum() if kind == "softmax" else x / x.sum()
        eps = 1e-6
        fd = np.stack([(row(s + eps * e) - row(s - eps * e)) / (2 * eps) for e in np.eye(6)], axis=1)
        assert np.allclose(mk.row_normaliser_jacobian(s, kind), fd, atol=1e-8)


def test_softmax_jacobian_is_bounded_and_linear_is_not():
    rng = np.random.default_rng(4)
    for scale in (1.0, 10.0, 100.0):
        assert np.abs(mk.row_normaliser_jacobian(scale * rng.normal(size=8), "softmax")).max() <= 0.25
    s = rng.uniform(0.5, 1.0, size=8)
    small = np.abs(mk.row_normaliser_jacobian(1e-3 * s, "linear")).max()
    assert small == pytest.approx(1e3 * np.abs(mk.row_normaliser_jacobian(s, "linear")).max())


def test_normaliser_jacobian_errors():
    with pytest.raises(ValueError, match="must be positive"):
        mk.row_normaliser_jacobian(np.array([1.0, 0.0]), "linear")
    with pytest.raises(ValueError, match="kind"):
        mk.row_normaliser_jacobian(np.ones(3), "relu")


# Claims the new sections of state_space_models and beyond_kv_cache print, recomputed by hand.

def test_retnet_half_lives_of_the_first_and_eighth_head():
    # gamma = 1 - 2^(-5-h) (RetNet sec. 2.2); half-life = ln 0.5 / ln gamma
    assert round(np.log(0.5) / np.log(1 - 2.0 ** -5)) == 22
    assert round(np.log(0.5) / np.log(1 - 2.0 ** -12)) == 2839


def test_lightning_flops_and_cumsum_bytes_at_128k():
    n, d, block = 131072, 128, 256
    left = 2 * n * n * (d + d)  # scores n x n x d, then weights times values n x n x d, 2 FLOPs per multiply-add
    tiled = 2 * n * block * (d + d) + 4 * n * d * d  # inside the blocks, then through the state
    assert mk.linear_attention_flops(n, d, d, "quadratic") == left
    assert mk.linear_attention_flops(n, d, d, "chunkwise", chunk=block) == tiled
    assert round(left / tiled) == 341
    assert n * d * d * 2 == 4 * 2 ** 30  # every token's 128 x 128 bf16 state: 4 GiB
    assert n // block == 512


def test_state_checkpoint_reuse_matches_vllm_issue_40696():
    # 528-token blocks (Qwen3.5-4B, vLLM 0.19.1): < 528 tokens 0%, 552 about 95%, 979 about 54%
    assert 480 // 528 * 528 == 0
    assert f"{528 / 552:.0%}" == "96%"
    assert f"{528 / 979:.0%}" == "54%"


def test_mamba2_checkpoint_bytes():
    # Mamba-2 2.7B: 64 layers, d_model 2560, expand 2, head dim 64, d_state 128, one group, d_conv 4, bf16
    d_inner = 2 * 2560
    per_layer = (d_inner // 64) * 64 * 128 + (d_inner + 2 * 128) * (4 - 1)
    assert mk.HYBRID_MODELS["mamba2-2.7b"].cache_bytes(1) == 64 * per_layer * 2
    assert mk.format_bytes(64 * per_layer * 2) == "82.0 MiB"
