"""Tests for mha_kit.heads: score ranks, tensor-parallel sharding, fused QKV."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

TOL = dict(rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# The low-rank bottleneck
# ---------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(h=st.sampled_from([1, 2, 4, 8]), d_h=st.integers(1, 6), n=st.integers(1, 20), seed=st.integers(0, 99))
def test_each_head_score_matrix_has_rank_at_most_head_dim(h, d_h, n, seed):
    cfg = mk.AttentionConfig(d_model=h * d_h, num_heads=h)
    w_q, w_k, _, _ = mk.init_weights(cfg, seed=seed)
    x = np.random.default_rng(seed).standard_normal((n, cfg.d_model))
    scores = mk.head_scores(x, w_q, w_k, h)
    assert scores.shape == (h, n, n)
    ranks = [np.linalg.matrix_rank(s) for s in scores]
    assert max(ranks) <= d_h
    assert ranks == [min(n, d_h)] * h  # random weights and tokens reach the bound


def test_head_scores_are_the_scores_attention_softmaxes():
    x, (w_q, w_k, w_v, w_o), cfg = mk.toy_example()
    _, weights = mk.multi_head_attention(x, w_q, w_k, w_v, w_o, cfg.num_heads)
    np.testing.assert_allclose(mk.softmax(mk.head_scores(x, w_q, w_k, cfg.num_heads)), weights, **TOL)


def test_head_scores_grouped_heads_read_their_kv_head():
    cfg = mk.AttentionConfig(d_model=8, num_heads=4, num_kv_heads=2)
    w_q, w_k, w_v, w_o = mk.init_weights(cfg, seed=3)
    x = np.random.default_rng(3).standard_normal((5, 8))
    _, weights = mk.multi_head_attention(x, w_q, w_k, w_v, w_o, 4, 2)
    np.testing.assert_allclose(mk.softmax(mk.head_scores(x, w_q, w_k, 4, 2)), weights, **TOL)


@pytest.mark.parametrize(
    "w_q_shape, w_k_shape, h, h_kv, message",
    [
        ((4, 6), (4, 6), 4, None, r"^expected w_q of shape \(4, num_heads \* head_dim\) with num_heads=4, got \(4, 6\)$"),
        ((4, 4), (4, 4), 2, 1, r"^expected w_k of shape \(4, 2\) = \(d, num_kv_heads \* head_dim\), got \(4, 4\)$"),
        ((4, 4), (4, 4), 3, 2, r"^num_heads \(3\) must be divisible by num_kv_heads \(2\)$"),
    ],
)
def test_head_scores_errors(w_q_shape, w_k_shape, h, h_kv, message):
    with pytest.raises(ValueError, match=message):
        mk.head_scores(np.zeros((3, 4)), np.zeros(w_q_shape), np.zeros(w_k_shape), h, h_kv)


# ---------------------------------------------------------------------------------------------
# Tensor parallelism
# ---------------------------------------------------------------------------------------------

def test_shard_heads_replicates_kv_heads_when_fewer_than_devices():
    shards = mk.shard_heads(num_heads=8, num_kv_heads=2, num_devices=4)
    assert [s.query_heads for s in shards] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert [s.kv_heads for s in shards] == [(0,), (0,), (1,), (1,)]
    assert mk.kv_replication(2, 4) == 2


def test_shard_heads_llama_3_70b_on_eight_devices():
    cfg = mk.PRESETS["llama-3-70b"]  # h = 64, h_kv = 8
    shards = mk.shard_heads(cfg.num_heads, cfg.num_kv_heads, 8)
    assert [s.kv_heads for s in shards] == [(r,) for r in range(8)]  # one KV head each, no copy
    assert all(len(s.query_heads) == 8 for s in shards)
    assert mk.kv_replication(cfg.num_kv_heads, 8) == 1


@settings(max_examples=40, deadline=None)
@given(h_kv=st.sampled_from([1, 2, 4, 8]), g=st.sampled_from([1, 2, 4]), devices=st.sampled_from([1, 2, 4, 8]))
def test_shards_cover_every_query_head_once_with_its_kv_head(h_kv, g, devices):
    h = h_kv * g
    if h % devices:
        with pytest.raises(ValueError, match=rf"^num_heads \({h}\) must be divisible by num_devices \({devices}\)"):
            mk.shard_heads(h, h_kv, devices)
        return
    shards = mk.shard_heads(h, h_kv, devices)
    assert sorted(i for s in shards for i in s.query_heads) == list(range(h))
    for s in shards:
        assert {i // g for i in s.query_heads} == set(s.kv_heads)  # every KV head it reads is local
    copies = [sum(j in s.kv_heads for s in shards) for j in range(h_kv)]
    assert copies == [mk.kv_replication(h_kv, devices)] * h_kv


@pytest.mark.parametrize(
    "h, h_kv, devices, message",
    [
        (8, 8, 3, r"^num_heads \(8\) must be divisible by num_devices \(3\): each device computes whole heads$"),
        (12, 6, 4, r"^num_kv_heads \(6\) and num_devices \(4\) must divide one another"),
        (8, 3, 2, r"^num_heads \(8\) must be divisible by num_kv_heads \(3\)$"),
        (8, 8, 0, r"^num_devices must be a positive integer, got 0$"),
    ],
)
def test_shard_heads_errors(h, h_kv, devices, message):
    with pytest.raises(ValueError, match=message):
        mk.shard_heads(h, h_kv, devices)


def test_kv_replication_error():
    with pytest.raises(ValueError, match=r"^num_kv_heads \(3\) and num_devices \(2\) must divide one another"):
        mk.kv_replication(3, 2)


@settings(max_examples=25, deadline=None)
@given(h_kv=st.sampled_from([1, 2, 4]), g=st.sampled_from([1, 2]), devices=st.sampled_from([1, 2, 4]),
       n=st.integers(1, 6), causal=st.booleans(), seed=st.integers(0, 99))
def test_tensor_parallel_attention_equals_mha(h_kv, g, devices, n, causal, seed):
    h = h_kv * g
    if h % devices:
        return
    cfg = mk.AttentionConfig(d_model=2 * h, num_heads=h, num_kv_heads=h_kv, head_dim=3)
    w = mk.init_weights(cfg, seed=seed)
    x = np.random.default_rng(seed).standard_normal((n, cfg.d_model))
    ref, _ = mk.multi_head_attention(x, *w, h, h_kv, causal=causal)
    out, partials = mk.tensor_parallel_attention(x, *w, h, h_kv, devices, causal=causal)
    np.testing.assert_allclose(out, ref, **TOL)
    assert len(partials) == devices and all(p.shape == ref.shape for p in partials)


def test_kv_cache_bytes_per_device_exact():
    cfg = mk.PRESETS["llama-3-70b"]  # 80 layers, h_kv = 8, d_h = 128, bf16
    per_token = mk.kv_cache_bytes_per_token(cfg)
    assert mk.kv_cache_bytes_per_device(cfg, 8) == per_token // 8 == 80 * 2 * 1 * 128 * 2
    assert mk.kv_cache_bytes_per_device(cfg, 2) == per_token // 2
    mqa = cfg.with_kv_heads(1)  # one KV head, replicated on all 8 devices
    assert mk.kv_cache_bytes_per_device(mqa, 8) == mk.kv_cache_bytes_per_token(mqa) == 80 * 2 * 128 * 2
    with pytest.raises(ValueError, match=r"^expected an AttentionConfig, got LatentAttentionConfig$"):
        mk.kv_cache_bytes_per_device(mk.PRESETS["deepseek-v2"], 8)


# ---------------------------------------------------------------------------------------------
# Fused QKV
# ---------------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(h_kv=st.sampled_from([1, 2]), g=st.sampled_from([1, 3]), d_h=st.integers(1, 4), n=st.integers(1, 5),
       seed=st.integers(0, 99))
def test_fused_qkv_equals_three_projections(h_kv, g, d_h, n, seed):
    h = h_kv * g
    cfg = mk.AttentionConfig(d_model=5, num_heads=h, num_kv_heads=h_kv, head_dim=d_h)
    w_q, w_k, w_v, _ = mk.init_weights(cfg, seed=seed)
    x = np.random.default_rng(seed).standard_normal((n, 5))
    w_qkv = mk.fuse_qkv(w_q, w_k, w_v)
    assert w_qkv.shape == (5, (h + 2 * h_kv) * d_h)
    q, k, v = mk.split_qkv(x @ w_qkv, h, h_kv, d_h)
    np.testing.assert_allclose(q, mk.split_heads(x @ w_q, h), **TOL)
    np.testing.assert_allclose(k, mk.split_heads(x @ w_k, h_kv), **TOL)
    np.testing.assert_allclose(v, mk.split_heads(x @ w_v, h_kv), **TOL)


def test_fused_qkv_errors():
    with pytest.raises(ValueError, match=r"^expected w_q \(d, h\*d_h\) and w_k, w_v \(d, h_kv\*d_h\) with the same d, got \(4, 4\), \(3, 2\), \(3, 2\)$"):
        mk.fuse_qkv(np.zeros((4, 4)), np.zeros((3, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"^expected a last axis of \(num_heads \+ 2 \* num_kv_heads\) \* head_dim = 16, got 12$"):
        mk.split_qkv(np.zeros((2, 12)), 2, 1, 4)
