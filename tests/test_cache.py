"""Tests for mha_kit.cache: the KV cache and cached (prefill + decode) attention."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

TOL = dict(rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# KVCache
# ---------------------------------------------------------------------------------------------

def test_cache_appends_in_order_and_views_the_filled_part():
    cache = mk.KVCache(num_kv_heads=2, head_dim=3, max_len=5)
    assert len(cache) == 0 and cache.keys.shape == (2, 0, 3) and cache.nbytes == 0
    k1, v1 = np.full((2, 2, 3), 1.0), np.full((2, 2, 3), -1.0)
    k2, v2 = np.full((2, 1, 3), 2.0), np.full((2, 1, 3), -2.0)
    cache.append(k1, v1)
    cache.append(k2, v2)
    assert len(cache) == 3
    np.testing.assert_array_equal(cache.keys, np.concatenate([k1, k2], axis=1))
    np.testing.assert_array_equal(cache.values, np.concatenate([v1, v2], axis=1))
    assert cache.nbytes == 2 * (2 * 3 * 3) * 8  # keys and values, 3 tokens, float64
    assert type(cache.nbytes) is int
    assert np.shares_memory(cache.keys, cache._k)  # a view, not a copy


@pytest.mark.parametrize(
    "dtype, itemsize",
    [
        (np.float64, 8),  # default
        (np.float32, 4),  # fp32
        (np.float16, 2),  # fp16: the 2 bytes per element of the article's bf16 figures
    ],
)
def test_cache_nbytes_matches_counting(dtype, itemsize):
    cfg = mk.AttentionConfig(16, 4, 2, num_layers=1)
    cache = mk.KVCache(cfg.num_kv_heads, cfg.head_dim, max_len=10, dtype=dtype)
    cache.append(np.zeros((2, 7, 4)), np.zeros((2, 7, 4)))
    assert cache.keys.dtype == dtype
    assert cache.nbytes == 7 * 2 * 2 * 4 * itemsize
    assert cache.nbytes == mk.kv_bytes_read(cfg, 7, fmt=8 * itemsize)


def test_cache_accepts_nested_lists():
    cache = mk.KVCache(1, 2, max_len=2)
    cache.append([[[1.0, 2.0]]], [[[3.0, 4.0]]])  # (h_kv, t, d_h) = (1, 1, 2) as lists
    np.testing.assert_array_equal(cache.keys, [[[1.0, 2.0]]])
    np.testing.assert_array_equal(cache.values, [[[3.0, 4.0]]])


def test_cache_can_be_filled_exactly():
    cache = mk.KVCache(1, 2, max_len=3)
    cache.append(np.zeros((1, 3, 2)), np.zeros((1, 3, 2)))
    assert len(cache) == 3
    with pytest.raises(ValueError, match=r"^cache full: 3 \+ 1 tokens exceeds max_len \(3\)$"):
        cache.append(np.zeros((1, 1, 2)), np.zeros((1, 1, 2)))
    assert len(cache) == 3  # a refused append changes nothing


@pytest.mark.parametrize(
    "k_shape, v_shape, message",
    [
        ((2, 1, 4), (2, 1, 3), r"^expected k of shape \(2, t, 3\), got \(2, 1, 4\)$"),  # wrong head size
        ((3, 1, 3), (2, 1, 3), r"^expected k of shape \(2, t, 3\), got \(3, 1, 3\)$"),  # wrong head count
        ((1, 3), (2, 1, 3), r"^expected k of shape \(2, t, 3\), got \(1, 3\)$"),  # missing token axis
        ((2, 1, 3), (2, 1), r"^expected v of shape \(2, t, 3\), got \(2, 1\)$"),  # v checked too
        ((2, 2, 3), (2, 1, 3), r"^k and v must hold the same number of tokens, got 2 and 1$"),
        ((2, 5, 3), (2, 5, 3), r"^cache full: 0 \+ 5 tokens exceeds max_len \(4\)$"),
    ],
)
def test_cache_append_errors(k_shape, v_shape, message):
    cache = mk.KVCache(2, 3, max_len=4)
    with pytest.raises(ValueError, match=message):
        cache.append(np.zeros(k_shape), np.zeros(v_shape))
    assert len(cache) == 0


@pytest.mark.parametrize("field, args", [("num_kv_heads", (0, 2, 3)), ("head_dim", (1, -2, 3)),
                                         ("max_len", (1, 2, 3.0))])
def test_cache_constructor_errors(field, args):
    with pytest.raises(ValueError, match=rf"^{field} must be a positive integer, got "):
        mk.KVCache(*args)


# ---------------------------------------------------------------------------------------------
# cached_attention: prefill then one token at a time equals the full causal pass
# ---------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(h_kv=st.integers(1, 3), g=st.integers(1, 3), d_h=st.integers(1, 4), d=st.integers(1, 6),
       n=st.integers(1, 8), prefill=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_cached_decode_equals_full_causal_pass(h_kv, g, d_h, d, n, prefill, seed):
    h = h_kv * g
    prefill = min(prefill, n)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    w = (rng.standard_normal((d, h * d_h)), rng.standard_normal((d, h_kv * d_h)),
         rng.standard_normal((d, h_kv * d_h)), rng.standard_normal((h * d_h, d)))
    full, full_weights = mk.multi_head_attention(x, *w, h, h_kv, causal=True)

    cache = mk.KVCache(h_kv, d_h, max_len=n)
    out, weights = mk.cached_attention(x[:prefill], *w, h, cache)  # prefill: the whole prompt at once
    np.testing.assert_allclose(out, full[:prefill], **TOL)
    np.testing.assert_allclose(weights, full_weights[:, :prefill, :prefill], **TOL)
    for t in range(prefill, n):  # decode: one token per step
        out, weights = mk.cached_attention(x[t:t + 1], *w, h, cache, num_kv_heads=h_kv)
        assert len(cache) == t + 1 and weights.shape == (h, 1, t + 1)
        np.testing.assert_allclose(out, full[t:t + 1], **TOL)
        np.testing.assert_allclose(weights[:, 0], full_weights[:, t, :t + 1], **TOL)
    # the cache holds exactly the keys and values of every token
    np.testing.assert_allclose(cache.keys, mk.split_heads(x @ w[1], h_kv), **TOL)
    np.testing.assert_allclose(cache.values, mk.split_heads(x @ w[2], h_kv), **TOL)


@pytest.mark.parametrize(
    "h, h_kv, chunks",
    [
        (4, 4, [3, 2, 1]),  # MHA, chunked prefill
        (4, 2, [1, 1, 1, 1, 1, 1]),  # GQA, token by token from the start
        (6, 1, [5, 1]),  # MQA, prompt then one token
    ],
)
def test_cached_attention_in_chunks(h, h_kv, chunks):
    cfg = mk.AttentionConfig(12, h, h_kv)
    w = mk.init_weights(cfg, seed=4)
    x = np.random.default_rng(4).standard_normal((sum(chunks), 12))
    full, _ = mk.multi_head_attention(x, *w, h, h_kv, causal=True)
    cache, start = mk.KVCache(h_kv, cfg.head_dim, max_len=len(x)), 0
    for size in chunks:
        out, _ = mk.cached_attention(x[start:start + size], *w, h, cache)
        np.testing.assert_allclose(out, full[start:start + size], **TOL)
        start += size


def test_decode_attention_over_a_filled_cache_matches_cached_attention():
    cfg = mk.AttentionConfig(8, 4, 2)
    w_q, w_k, w_v, w_o = mk.init_weights(cfg, seed=9)
    x = np.random.default_rng(9).standard_normal((5, 8))
    cache = mk.KVCache(2, 2, max_len=5)
    mk.cached_attention(x[:4], w_q, w_k, w_v, w_o, 4, cache)
    out, _ = mk.cached_attention(x[4:], w_q, w_k, w_v, w_o, 4, cache)
    q = (x[4] @ w_q).reshape(4, 2)  # (h, d_h) for the newest token
    heads = mk.decode_attention(q, cache.keys, cache.values)  # (h, d_h)
    np.testing.assert_allclose(heads.reshape(1, -1) @ w_o, out, **TOL)


def test_cached_attention_errors():
    cfg = mk.AttentionConfig(8, 4, 2)
    w = mk.init_weights(cfg)
    x = np.ones((1, 8))
    with pytest.raises(ValueError, match=r"^cache holds 1 heads of 2, but the weights give 2 heads of 2$"):
        mk.cached_attention(x, *w, 4, mk.KVCache(1, 2, 4), num_kv_heads=2)
    with pytest.raises(ValueError, match=r"^expected w_k of shape \(8, 2\) = \(d, num_kv_heads \* head_dim\), got \(8, 4\)$"):  # cache of 1 KV head, weights for 2
        mk.cached_attention(x, *w, 4, mk.KVCache(1, 2, 4))
    with pytest.raises(ValueError, match=r"^cache holds 2 heads of 3, but the weights give 2 heads of 2$"):
        mk.cached_attention(x, *w, 4, mk.KVCache(2, 3, 4))
    with pytest.raises(ValueError, match=r"^expected x_new of shape \(n, d\) \(optionally with leading batch axes\), got \(8,\)$"):
        mk.cached_attention(x[0], *w, 4, mk.KVCache(2, 2, 4))
    cache = mk.KVCache(2, 2, 2)
    with pytest.raises(ValueError, match=r"^cache full: 0 \+ 3 tokens exceeds max_len \(2\)$"):
        mk.cached_attention(np.ones((3, 8)), *w, 4, cache)


# ---------------------------------------------------------------------------------------------
# decode_attention: the reference decode step (the benchmark's kernels are tested against it)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h, h_kv, s", [
    (8, 8, 7),  # MHA
    (8, 2, 1),  # GQA, g = 4, a single cached token
    (6, 1, 32),  # MQA
])
def test_decode_attention_equals_grouped_attention(h, h_kv, s):
    rng = np.random.default_rng(h * 100 + h_kv * 10 + s)
    q = rng.standard_normal((h, 4))
    k, v = rng.standard_normal((h_kv, s, 4)), rng.standard_normal((h_kv, s, 5))  # d_v may differ from d_h
    out = mk.decode_attention(q, k, v)
    assert out.shape == (h, 5) and out.dtype == np.float64
    np.testing.assert_allclose(out, mk.grouped_attention(q[:, None], k, v)[0][:, 0], **TOL)


def test_decode_attention_keeps_float32_and_raises_on_nan():
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((2, 9, 8), dtype=np.float32)
    assert mk.decode_attention(q, k, k).dtype == np.float32
    k[1, 7, 0] = np.nan
    with pytest.raises(ValueError, match=r"^softmax input contains NaN or \+inf$"):
        mk.decode_attention(q, k, k)



def test_decode_attention_k_and_v_disagree():
    q, k = np.ones((4, 2)), np.ones((2, 5, 2))
    with pytest.raises(ValueError, match=r"^expected k_cache \(h_kv, s, d_h\) and v_cache \(h_kv, s, d_v\) for q \(4, 2\), got \(2, 5, 3\) and \(2, 5, 2\)$"):
        mk.decode_attention(q, np.ones((2, 5, 3)), k)  # head sizes of q and k differ
    with pytest.raises(ValueError, match=r"got \(2, 5, 2\) and \(2, 4, 2\)$"):
        mk.decode_attention(q, k, np.ones((2, 4, 2)))  # k and v hold different numbers of tokens
    with pytest.raises(ValueError, match=r"^k and v must have the same number of heads, got 2 and 1$"):
        mk.decode_attention(q, k, np.ones((1, 5, 2)))
    with pytest.raises(ValueError, match=r"^num_heads \(4\) must be divisible by num_kv_heads \(3\)$"):
        mk.decode_attention(q, np.ones((3, 5, 2)), np.ones((3, 5, 2)))
