"""Tests for mha_kit.serving: paged and rolling caches, prefix sharing, 8-bit cache."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

TOL = dict(rtol=1e-10, atol=1e-12)


def _layer(d, h, h_kv, seed):
    cfg = mk.AttentionConfig(d_model=d, num_heads=h, num_kv_heads=h_kv)
    return cfg, mk.init_weights(cfg, seed=seed)


def _naive_window_mask(n, window):
    """Query i may see key j when i - window < j <= i: written out with loops."""
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            mask[i, j] = i - window < j <= i
    return mask


def _chunks(n, cuts):
    """Split range(n) at the sorted, distinct cut points inside it."""
    bounds = [0, *sorted({c for c in cuts if 0 < c < n}), n]
    return [(a, b) for a, b in zip(bounds, bounds[1:])]


# ---------------------------------------------------------------------------------------------
# Paged cache
# ---------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(h_kv=st.sampled_from([1, 2]), g=st.sampled_from([1, 2]), n=st.integers(1, 12),
       block_size=st.integers(1, 5), cuts=st.lists(st.integers(1, 11), max_size=4), seed=st.integers(0, 99))
def test_paged_attention_equals_contiguous_cache(h_kv, g, n, block_size, cuts, seed):
    cfg, w = _layer(8 * h_kv * g, h_kv * g, h_kv, seed)
    x = np.random.default_rng(seed).standard_normal((n, cfg.d_model))
    contiguous = mk.KVCache(h_kv, cfg.head_dim, max_len=n)
    paged = mk.PagedKVCache(mk.BlockPool(n, block_size, h_kv, cfg.head_dim))
    for a, b in _chunks(n, cuts):  # the same prefill/decode chunks through both caches
        ref, ref_w = mk.cached_attention(x[a:b], *w, cfg.num_heads, contiguous)
        out, out_w = mk.cached_attention(x[a:b], *w, cfg.num_heads, paged)
        np.testing.assert_allclose(out, ref, **TOL)
        np.testing.assert_allclose(out_w, ref_w, **TOL)
    np.testing.assert_array_equal(paged.keys, contiguous.keys)
    np.testing.assert_array_equal(paged.values, contiguous.values)
    assert len(paged.block_table) == -(-n // block_size)


def test_paged_cache_blocks_need_not_be_adjacent():
    pool = mk.BlockPool(num_blocks=6, block_size=2, num_kv_heads=1, head_dim=1)
    a, b = mk.PagedKVCache(pool), mk.PagedKVCache(pool)
    def token(value):
        return np.full((1, 1, 1), value), np.full((1, 1, 1), value)  # (h_kv, t, d_h)

    for t in range(3):  # two sequences growing in turn take interleaved blocks
        a.append(*token(t))
        b.append(*token(10 + t))
        a.append(*token(t + 0.5))
    assert a.block_table == [0, 2, 3] and b.block_table == [1, 4]
    np.testing.assert_array_equal(a.keys[0, :, 0], [0, 0.5, 1, 1.5, 2, 2.5])
    np.testing.assert_array_equal(b.keys[0, :, 0], [10, 11, 12])
    assert pool.num_used == 5 and a.nbytes == 3 * 2 * 2 * 8


def test_freed_blocks_are_reused():
    pool = mk.BlockPool(num_blocks=2, block_size=2, num_kv_heads=1, head_dim=1)
    a = mk.PagedKVCache(pool)
    a.append(np.ones((1, 4, 1)), np.ones((1, 4, 1)))
    assert pool.num_free == 0
    a.free()
    assert pool.num_free == 2 and len(a) == 0 and a.block_table == []
    b = mk.PagedKVCache(pool)
    b.append(np.full((1, 3, 1), 7.0), np.full((1, 3, 1), 7.0))
    np.testing.assert_array_equal(b.keys, np.full((1, 3, 1), 7.0))


def test_pool_exhausted_refuses_and_changes_nothing():
    pool = mk.BlockPool(num_blocks=2, block_size=2, num_kv_heads=1, head_dim=1)
    cache = mk.PagedKVCache(pool)
    cache.append(np.zeros((1, 3, 1)), np.zeros((1, 3, 1)))
    with pytest.raises(ValueError, match=r"^block pool exhausted: 2 more tokens need 1 blocks, 0 of 2 are free$"):
        cache.append(np.zeros((1, 2, 1)), np.zeros((1, 2, 1)))
    assert len(cache) == 3 and cache.block_table == [0, 1]
    with pytest.raises(ValueError, match=r"^block pool exhausted: all 2 blocks of 2 tokens are in use$"):
        pool.allocate()


@pytest.mark.parametrize(
    "k_shape, v_shape, message",
    [
        ((2, 1, 4), (2, 1, 3), r"^expected k of shape \(2, t, 3\), got \(2, 1, 4\)$"),  # wrong head size
        ((1, 1, 3), (2, 1, 3), r"^expected k of shape \(2, t, 3\), got \(1, 1, 3\)$"),  # wrong head count
        ((2, 1, 3), (2, 3), r"^expected v of shape \(2, t, 3\), got \(2, 3\)$"),  # token axis missing
        ((2, 2, 3), (2, 1, 3), r"^k and v must hold the same number of tokens, got 2 and 1$"),
    ],
)
def test_paged_and_rolling_append_errors(k_shape, v_shape, message):
    for cache in (mk.PagedKVCache(mk.BlockPool(4, 2, 2, 3)), mk.RollingKVCache(2, 3, window=4)):
        with pytest.raises(ValueError, match=message):
            cache.append(np.zeros(k_shape), np.zeros(v_shape))
        assert len(cache) == 0


def test_pool_and_cache_argument_errors():
    with pytest.raises(ValueError, match=r"^block_size must be a positive integer, got 0$"):
        mk.BlockPool(4, 0, 1, 1)
    with pytest.raises(ValueError, match=r"^expected a BlockPool, got KVCache$"):
        mk.PagedKVCache(mk.KVCache(1, 1, 1))
    pool = mk.BlockPool(2, 2, 1, 1)
    with pytest.raises(ValueError, match=r"^block 1 is not in use \(pool of 2 blocks\)$"):
        pool.release(1)
    with pytest.raises(ValueError, match=r"^block 5 is not in use \(pool of 2 blocks\)$"):
        pool.retain(5)


# ---------------------------------------------------------------------------------------------
# Memory against reserving max_len
# ---------------------------------------------------------------------------------------------

def test_cache_slots_exact():
    slots = mk.cache_slots([5, 16, 17, 1], max_len=32, block_size=16)
    assert slots == mk.CacheSlots(used=39, reserved=128, paged=16 + 16 + 32 + 16)
    assert slots.fraction_used("reserved") == 39 / 128
    assert slots.fraction_used("paged") == 39 / 80


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(1, 64), min_size=1, max_size=8), block_size=st.integers(1, 16))
def test_paged_slots_match_a_real_pool_and_waste_under_one_block_each(lengths, block_size):
    slots = mk.cache_slots(lengths, max_len=64, block_size=block_size)
    pool = mk.BlockPool(sum(-(-n // block_size) for n in lengths), block_size, 1, 1)
    for n in lengths:
        mk.PagedKVCache(pool).append(np.zeros((1, n, 1)), np.zeros((1, n, 1)))
    assert slots.paged == pool.num_used * block_size  # the formula is what the pool hands out
    assert slots.used <= slots.paged < slots.used + len(lengths) * block_size


@pytest.mark.parametrize(
    "lengths, max_len, block_size, message",
    [
        ([], 8, 2, r"^lengths must name at least one request, got none$"),
        ([3, 9], 8, 2, r"^a request of 9 tokens exceeds max_len \(8\)$"),
        ([3, 0], 8, 2, r"^length must be a positive integer, got 0$"),
        ([3], 8, 2.0, r"^block_size must be a positive integer, got 2.0 \(float\)$"),
    ],
)
def test_cache_slots_errors(lengths, max_len, block_size, message):
    with pytest.raises(ValueError, match=message):
        mk.cache_slots(lengths, max_len, block_size)


def test_fraction_used_policy_error():
    with pytest.raises(ValueError, match=r"^policy must be 'reserved' or 'paged', got 'max'$"):
        mk.cache_slots([1], 2, 1).fraction_used("max")


# ---------------------------------------------------------------------------------------------
# Prefix sharing
# ---------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(prefix=st.integers(1, 20), suffixes=st.lists(st.integers(1, 9), min_size=1, max_size=4),
       block_size=st.integers(1, 6))
def test_forked_requests_use_the_blocks_the_formula_counts(prefix, suffixes, block_size):
    unshared, shared = mk.shared_prefix_blocks(prefix, suffixes, block_size)
    pool = mk.BlockPool(unshared + 1, block_size, 1, 1)
    base = mk.PagedKVCache(pool)
    base.append(np.ones((1, prefix, 1)), np.ones((1, prefix, 1)))
    requests = [base.fork() for _ in suffixes]
    base.free()  # the prompt's own table is gone; the requests keep the blocks alive
    for cache, n in zip(requests, suffixes):
        cache.append(np.full((1, n, 1), 2.0), np.full((1, n, 1), 2.0))
    assert pool.num_used == shared
    assert unshared == sum(-(-(prefix + n) // block_size) for n in suffixes)
    for cache, n in zip(requests, suffixes):  # nobody sees anybody else's tokens
        np.testing.assert_array_equal(cache.keys[0, :, 0], [1.0] * prefix + [2.0] * n)


def test_copy_on_write_keeps_the_original_intact():
    pool = mk.BlockPool(4, 4, 1, 1)
    a = mk.PagedKVCache(pool)
    a.append(np.arange(3.0).reshape(1, 3, 1), np.arange(3.0).reshape(1, 3, 1))
    b = a.fork()
    assert b.block_table == a.block_table and pool.ref_count[0] == 2
    b.append([[[9.0]]], [[[9.0]]])
    assert b.block_table != a.block_table and pool.ref_count[0] == 1
    np.testing.assert_array_equal(a.keys[0, :, 0], [0, 1, 2])
    np.testing.assert_array_equal(b.keys[0, :, 0], [0, 1, 2, 9])


def test_shared_prefix_blocks_exact():
    # 100-token prompt, blocks of 16: 6 full blocks shared, a 4-token tail copied by each request
    assert mk.shared_prefix_blocks(100, [10, 30], 16) == (7 + 9, 6 + 1 + 3)
    with pytest.raises(ValueError, match=r"^suffix_lens must name at least one request, got none$"):
        mk.shared_prefix_blocks(4, [], 2)
    with pytest.raises(ValueError, match=r"^prefix_len must be a positive integer, got 0$"):
        mk.shared_prefix_blocks(0, [1], 2)


# ---------------------------------------------------------------------------------------------
# Rolling cache
# ---------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(h_kv=st.sampled_from([1, 2]), g=st.sampled_from([1, 2]), n=st.integers(1, 14), window=st.integers(1, 6),
       cuts=st.lists(st.integers(1, 13), max_size=4), seed=st.integers(0, 99))
def test_rolling_cache_equals_full_attention_with_window_mask(h_kv, g, n, window, cuts, seed):
    cfg, w = _layer(8 * h_kv * g, h_kv * g, h_kv, seed)
    x = np.random.default_rng(seed).standard_normal((n, cfg.d_model))
    w_q, w_k, w_v, w_o = w
    q = mk.split_heads(x @ w_q, cfg.num_heads)
    k, v = mk.split_heads(x @ w_k, h_kv), mk.split_heads(x @ w_v, h_kv)
    heads, _ = mk.grouped_attention(q, k, v, _naive_window_mask(n, window))
    reference = mk.merge_heads(heads) @ w_o  # full attention, sliding-window mask, all n tokens
    cache = mk.RollingKVCache(h_kv, cfg.head_dim, window)
    outs = [mk.rolling_cached_attention(x[a:b], *w, cfg.num_heads, cache)[0] for a, b in _chunks(n, cuts)]
    np.testing.assert_allclose(np.vstack(outs), reference, **TOL)
    assert len(cache) == min(n, window) and cache.seen == n
    np.testing.assert_allclose(cache.keys, k[:, max(0, n - window):], **TOL)  # the last W keys, in order


def test_rolling_cache_memory_stops_growing():
    cache = mk.RollingKVCache(num_kv_heads=2, head_dim=4, window=3)
    sizes = []
    for t in range(6):
        cache.append(np.full((2, 1, 4), float(t)), np.zeros((2, 1, 4)))
        sizes.append(len(cache))
    assert sizes == [1, 2, 3, 3, 3, 3]
    assert cache.nbytes == 2 * 2 * 3 * 4 * 8  # keys and values, 2 heads, 3 slots, float64
    np.testing.assert_array_equal(cache.keys[0, :, 0], [3, 4, 5])


def test_rolling_cache_chunk_longer_than_window():
    cache = mk.RollingKVCache(1, 1, window=2)
    cache.append(np.arange(5.0).reshape(1, 5, 1), np.arange(5.0).reshape(1, 5, 1))
    np.testing.assert_array_equal(cache.keys[0, :, 0], [3, 4])
    assert cache.seen == 5


def test_rolling_attention_argument_errors():
    cfg, w = _layer(8, 2, 2, 0)
    with pytest.raises(ValueError, match=r"^expected a RollingKVCache, got KVCache$"):
        mk.rolling_cached_attention(np.zeros((1, 8)), *w, 2, mk.KVCache(2, 4, 4))
    with pytest.raises(ValueError, match=r"^expected w_k of shape \(8, 4\) = \(d, num_kv_heads \* head_dim\), got \(8, 8\)$"):
        mk.rolling_cached_attention(np.zeros((1, 8)), *w, 2, mk.RollingKVCache(1, 4, 4))
    with pytest.raises(ValueError, match=r"^window must be a positive integer, got 0$"):
        mk.RollingKVCache(1, 4, 0)


# ---------------------------------------------------------------------------------------------
# 8-bit cache with a per-head scale
# ---------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(h_kv=st.integers(1, 4), s=st.integers(1, 10), d_h=st.integers(1, 8),
       spread=st.floats(1e-3, 1e3), seed=st.integers(0, 99))
def test_quantization_error_is_at_most_half_a_step(h_kv, s, d_h, spread, seed):
    x = spread * np.random.default_rng(seed).standard_normal((h_kv, s, d_h))
    q, scale = mk.quantize_per_head(x)
    assert q.dtype == np.int8 and scale.shape == (h_kv,)
    assert np.abs(q).max() <= 127
    err = np.abs(mk.dequantize_per_head(q, scale) - x)
    assert (err <= scale[:, None, None] / 2 * (1 + 1e-12)).all()
    np.testing.assert_array_equal(np.abs(q).max(axis=(1, 2)), 127)  # each head uses its full range


def test_quantization_keeps_zeros_and_each_head_has_its_own_scale():
    x = np.zeros((2, 2, 2))
    x[1] = [[1.27, -2.54], [0.0, 0.01]]
    q, scale = mk.quantize_per_head(x)
    np.testing.assert_array_equal(q[0], 0)
    assert scale[0] == 1.0 and scale[1] == pytest.approx(0.02)
    np.testing.assert_array_equal(q[1], [[64, -127], [0, 0]])  # 1.27 / 0.02 = 63.5 rounds to even


@pytest.mark.parametrize(
    "x, message",
    [
        (np.zeros((2, 3)), r"^expected a cache of shape \(h_kv, s, d_h\) with at least one token, got \(2, 3\)$"),
        (np.zeros((2, 0, 3)), r"^expected a cache of shape \(h_kv, s, d_h\) with at least one token, got \(2, 0, 3\)$"),
        (np.full((1, 1, 1), np.nan), r"^cannot quantize a cache that contains NaN or inf$"),
    ],
)
def test_quantize_errors(x, message):
    with pytest.raises(ValueError, match=message):
        mk.quantize_per_head(x)


def test_dequantize_and_bytes_errors():
    with pytest.raises(ValueError, match=r"^expected q of shape \(h_kv, s, d_h\) and scale of shape \(h_kv,\), got \(2, 1, 1\) and \(3,\)$"):
        mk.dequantize_per_head(np.zeros((2, 1, 1), np.int8), np.ones(3))
    with pytest.raises(ValueError, match=r"^num_scales must be a non-negative integer, got -1$"):
        mk.quantized_cache_bytes(10, -1)


def test_quantized_cache_bytes_exact():
    cfg = mk.PRESETS["llama-3-70b"]
    elements = cfg.num_layers * mk.kv_elements_per_token(cfg)  # one token, all layers
    assert mk.quantized_cache_bytes(elements, 0) == mk.kv_cache_bytes_per_token(cfg) // 2
    assert mk.quantized_cache_bytes(1000, 2 * 8 * 80) == 1000 + 4 * 1280  # fp32 scales


def test_appending_no_tokens_changes_nothing():
    for cache in (mk.PagedKVCache(mk.BlockPool(2, 2, 1, 1)), mk.RollingKVCache(1, 1, window=2)):
        cache.append(np.zeros((1, 0, 1)), np.zeros((1, 0, 1)))
        assert len(cache) == 0 and cache.keys.shape == (1, 0, 1)
