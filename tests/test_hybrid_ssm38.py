"""Gated delta rule, learned-sparse decode reads and the 2025-26 hybrid records (issue 38: U31, U33).

Checked against their primary sources: the gated delta rule against its definition in Yang et
al. 2024 (sec. 3.1) with the matrices written out and against the unrolled sum; NSA's token count
against the paper's Table 4; MoBA's against its 1M-token sparsity (95.31%); the hybrid records
against the config values, products written out. The chapter claims of beyond_kv_cache (blocks or
tokens) and state_space_models (production hybrids) are recomputed independently.
"""
import numpy as np
import pytest

import mha_kit as mk


def _by_definition(q, k, v, alpha, beta):
    n, d_k = k.shape
    S, out = np.zeros((v.shape[1], d_k)), np.empty_like(v)
    for t in range(n):
        gate = np.diag(np.broadcast_to(alpha[t], (d_k,)))  # (d_k, d_k)
        S = S @ (gate @ (np.eye(d_k) - beta[t] * np.outer(k[t], k[t]))) + beta[t] * np.outer(v[t], k[t])
        out[t] = S @ q[t]
    return out, S


@pytest.fixture
def inputs():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 12, 5))
    k /= np.linalg.norm(k, axis=1, keepdims=True)
    return rng, q, k, rng.normal(size=(12, 3)), rng.uniform(0.5, 1.0, 12), rng.uniform(0.0, 1.0, 12)


def test_gated_delta_rule_matches_its_definition(inputs):
    rng, q, k, v, alpha, beta = inputs
    for gate in (alpha, rng.uniform(0.5, 1.0, (12, 5))):  # Gated DeltaNet's scalar gate, KDA's channel gate
        out, state = mk.gated_delta_rule(q, k, v, gate, beta)
        ref_out, ref_state = _by_definition(q, k, v, gate, beta)
        np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(state, ref_state, rtol=0, atol=1e-12)


def test_gated_delta_rule_unrolled(inputs):
    # S_n = sum_i beta_i v_i k_i^T prod_{j > i} alpha_j (I - beta_j k_j k_j^T)
    _, q, k, v, alpha, beta = inputs
    n, d_k = k.shape
    S = np.zeros((3, d_k))
    for i in range(n):
        term = beta[i] * np.outer(v[i], k[i])
        for j in range(i + 1, n):
            term = term @ (alpha[j] * (np.eye(d_k) - beta[j] * np.outer(k[j], k[j])))
        S += term
    np.testing.assert_allclose(mk.gated_delta_rule(q, k, v, alpha, beta)[1], S, rtol=0, atol=1e-12)


def test_gated_delta_rule_special_cases(inputs):
    _, q, k, v, alpha, beta = inputs
    ones = np.ones(12)
    # beta = 1, alpha = 1, unit key: the key reads back exactly the value just written (overwrite)
    _, S = mk.gated_delta_rule(q[:2], k[[0, 0]], v[:2], ones[:2], ones[:2])
    np.testing.assert_allclose(S @ k[0], v[1], rtol=0, atol=1e-12)
    # beta = 0: nothing is written, the state only decays
    start = np.arange(15.0).reshape(3, 5)
    _, S = mk.gated_delta_rule(q[:3], k[:3], v[:3], np.full(3, 0.5), np.zeros(3), state=start)
    np.testing.assert_allclose(S, start / 8, rtol=0, atol=1e-12)


def test_gated_delta_rule_errors(inputs):
    _, q, k, v, alpha, beta = inputs
    with pytest.raises(ValueError, match="same n"):
        mk.gated_delta_rule(q, k[:5], v, alpha, beta)
    with pytest.raises(ValueError, match=r"alpha must be \(n,\) or \(n, d_k\)"):
        mk.gated_delta_rule(q, k, v, alpha[:4], beta)
    with pytest.raises(ValueError, match="0 < alpha <= 1"):
        mk.gated_delta_rule(q, k, v, alpha * 0, beta)
    with pytest.raises(ValueError, match="0 <= beta <= 1"):
        mk.gated_delta_rule(q, k, v, alpha, beta + 1)


def test_nsa_tokens_reproduce_table_4():
    # NSA Table 4: expected tokens loaded per decode step: 2048, 2560, 3584, 5632 at 8K ... 64K
    assert [mk.nsa_decode_tokens(s) for s in (8192, 16384, 32768, 65536)] == [2048, 2560, 3584, 5632]
    assert mk.nsa_decode_tokens(131072) == 131072 // 16 + 16 * 64 + 512
    assert mk.nsa_decode_tokens(100) == 100 // 16 + 100 + 100  # every branch capped at the context
    with pytest.raises(ValueError, match="sel_block must be a positive integer"):
        mk.nsa_decode_tokens(1024, sel_block=0)


def test_moba_reads_and_sparsity():
    assert mk.moba_decode_tokens(2**20) == (256, 12 * 4096)
    assert 1 - mk.moba_decode_tokens(2**20)[1] / 2**20 == pytest.approx(0.953125)  # 95.31% at 1M
    assert 1 - mk.moba_decode_tokens(8192, block=512, top_k=3)[1] / 8192 == 0.8125  # 8K setting
    assert mk.moba_decode_tokens(10000, block=4096, top_k=12) == (3, 10000)  # a partial last block
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        mk.moba_decode_tokens(8192, top_k=0)


def test_dsa_reads():
    assert mk.dsa_decode_tokens(131072) == (131072, 2048)
    assert mk.dsa_decode_tokens(1000) == (1000, 1000)
    with pytest.raises(ValueError, match="context_len must be a positive integer"):
        mk.dsa_decode_tokens(0)


def test_hybrid_records_from_configs():
    s = 131072
    kimi = mk.HYBRID_MODELS["kimi-linear-48b-a3b"]
    kda_state = 32 * 128 * 128 + (32 * 128 * 3) * 3  # 32 heads of 128 x 128, conv over q, k, v keeping 3 inputs
    assert kimi.cache_bytes(s) == 2 * (7 * (512 + 64) * s + 20 * kda_state)
    m1 = mk.HYBRID_MODELS["minimax-m1"]
    assert m1.attention_layers + m1.state_layers == 80 and m1.attention_layers == 80 // 8
    assert m1.cache_bytes(s) == 2 * (10 * 2 * 8 * 128 * s + 70 * 64 * 128 * 128)
    assert mk.HYBRID_MODELS["minimax-m2"].cache_bytes(s) == 2 * 62 * 2 * 8 * 128 * s
    qwen = mk.HYBRID_MODELS["qwen3-next-80b-a3b"]
    assert qwen.kv_per_token == 2 * 2 * 256  # no latent: keys and values of 2 KV heads of 256


def test_chapter_beyond_kv_cache_block_vs_token():
    s = 131072
    dsa_total = s * (128 + 4) + 2048 * (512 + 64) * 2  # indexer scan + 2,048 bf16 latents
    dsa_full = s * 576 * 2
    assert round(dsa_total / dsa_full, 2) == 0.13  # "13%"
    assert round(s * 132 / dsa_total, 2) == 0.88  # the indexer's share of DSA's bytes
    nsa_share = 4 * (8192 + 1024 + 512) * 640 / (4 * s * 640)
    assert f"{nsa_share:.1%}" == "7.4%"
    assert f"{12 * 4096 / s:.1%}" == "37.5%"  # MoBA, heads of a group agree (block means not counted)


def test_chapter_state_space_models_production_hybrids():
    s = 131072
    m2 = 2 * 62 * 2 * 8 * 128 * s
    kimi = 2 * (7 * 576 * s + 20 * (32 * 128 * 128 + 32 * 128 * 3 * 3))
    assert mk.format_bytes(m2) == "31 GiB"
    assert round(m2 / kimi) == 31
    m1_states, m1_kv_token = 2 * 70 * 64 * 128 * 128, 2 * 10 * 2 * 8 * 128
    assert m1_states // m1_kv_token == 3584
