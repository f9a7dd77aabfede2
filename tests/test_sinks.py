"""Tests for mha_kit.sinks: the sink mask, the sink cache, a StreamingLLM decode step, sink logits.

The references are full attention over the whole text with a mask written from the definition
(a query sees the first n_sink keys and its last `window` keys), causal attention over the held
tokens taken as a text of their own (StreamingLLM's positions in the cache, sec. 3.2), and a
softmax over the scores plus one extra column of value zero (gpt-oss's learned sink).
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

PROPERTY = settings(max_examples=30, deadline=None)
TOL = dict(rtol=1e-10, atol=1e-12)


def mask_from_definition(n, n_sink, window):
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            mask[i, j] = j < n_sink or j > i - window
    return mask


def random_heads(seed, n, h=4, h_kv=2, d_h=8):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((h, n, d_h)), rng.standard_normal((h_kv, n, d_h)), rng.standard_normal((h_kv, n, d_h))


def decode(q, k, v, n_sink, window, positions):
    cache = mk.SinkCache(n_sink, window)
    steps = [mk.sink_decode_step(q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], cache, positions)
             for t in range(q.shape[1])]
    return cache, steps


# ---------------------------------------------------------------------------------------------
# The mask
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, n_sink, window", [(1, 0, 1), (7, 1, 2), (12, 4, 3), (6, 8, 2), (9, 2, 20)])
def test_sink_mask_matches_its_definition(n, n_sink, window):
    np.testing.assert_array_equal(mk.sink_mask(n, n_sink, window), mask_from_definition(n, n_sink, window))


def test_sink_mask_limits_and_queries_at_the_end():
    np.testing.assert_array_equal(mk.sink_mask(9, 0, 3), mk.sliding_window_mask(9, 3))  # no sinks: the window
    np.testing.assert_array_equal(mk.sink_mask(9, 2, 9), mk.causal_mask(9))  # window covers all: causal
    np.testing.assert_array_equal(mk.sink_mask(2, 1, 2, n_keys=6), mask_from_definition(6, 1, 2)[-2:])


# ---------------------------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------------------------

def test_cache_keeps_the_first_tokens_and_the_last_window():
    cache = mk.SinkCache(n_sink=4, window=3)
    k = np.arange(10.0).reshape(1, 10, 1)  # token t's key is t
    for t in range(10):
        cache.append(k[:, t:t + 1], -k[:, t:t + 1])
    assert cache.positions.tolist() == [0, 1, 2, 3, 7, 8, 9] and cache.seen == 10
    assert cache.keys[0, :, 0].tolist() == [0, 1, 2, 3, 7, 8, 9]
    assert cache.values[0, :, 0].tolist() == [0, -1, -2, -3, -7, -8, -9]
    assert len(cache) == cache.capacity == 7
    assert cache.nbytes == 2 * 7 * 8  # keys and values, 7 tokens of one float64


def test_cache_holds_everything_until_it_is_full():
    cache = mk.SinkCache(n_sink=4, window=3)
    assert cache.nbytes == 0 and len(cache) == 0
    cache.append(np.ones((2, 5, 3)), np.ones((2, 5, 3)))
    assert cache.positions.tolist() == [0, 1, 2, 3, 4]


@PROPERTY
@given(n_sink=st.integers(0, 5), window=st.integers(1, 6), chunks=st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_chunks_and_single_tokens_leave_the_same_cache(n_sink, window, chunks):
    total = sum(chunks)
    k = np.random.default_rng(total).standard_normal((2, total, 3))
    by_chunk, by_token = mk.SinkCache(n_sink, window), mk.SinkCache(n_sink, window)
    start = 0
    for size in chunks:
        by_chunk.append(k[:, start:start + size], k[:, start:start + size])
        start += size
    for t in range(total):
        by_token.append(k[:, t:t + 1], k[:, t:t + 1])
    np.testing.assert_array_equal(by_chunk.keys, by_token.keys)
    assert by_chunk.positions.tolist() == by_token.positions.tolist()
    expected = [p for p in range(total) if p < n_sink or p >= total - window]
    assert by_chunk.positions.tolist() == expected
    np.testing.assert_array_equal(by_chunk.keys, k[:, expected])


def test_no_sinks_is_the_rolling_cache():
    k = np.random.default_rng(3).standard_normal((2, 11, 4))
    sink, rolling = mk.SinkCache(0, 4), mk.RollingKVCache(2, 4, window=4)
    for t in range(11):
        sink.append(k[:, t:t + 1], k[:, t:t + 1])
        rolling.append(k[:, t:t + 1], k[:, t:t + 1])
    np.testing.assert_array_equal(sink.keys, rolling.keys)


# ---------------------------------------------------------------------------------------------
# A decode step
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(n=st.integers(1, 24), n_sink=st.integers(0, 5), window=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_original_positions_equal_full_attention_with_the_sink_mask(n, n_sink, window, seed):
    q, k, v = random_heads(seed, n)
    cache, steps = decode(q, k, v, n_sink, window, "original")
    reference, weights = mk.rotary_attention(q, k, v, np.arange(n), mask=mask_from_definition(n, n_sink, window))
    np.testing.assert_allclose(np.concatenate([out for out, _ in steps], axis=1), reference, **TOL)
    last = weights[:, -1:, cache.positions]  # the last query's weights on the held tokens
    np.testing.assert_allclose(steps[-1][1], last, **TOL)
    assert len(cache) == min(n, n_sink + window)


@PROPERTY
@given(n=st.integers(1, 24), n_sink=st.integers(0, 5), window=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_cache_positions_equal_attention_over_the_held_tokens_as_a_text(n, n_sink, window, seed):
    # StreamingLLM sec. 3.2: positions within the cache, as if the evicted tokens never existed
    q, k, v = random_heads(seed, n)
    cache, steps = decode(q, k, v, n_sink, window, "cache")
    held = cache.positions
    reference, _ = mk.rotary_attention(q[:, held], k[:, held], v[:, held], np.arange(len(held)),
                                       mask=mk.causal_mask(len(held)))
    np.testing.assert_allclose(steps[-1][0], reference[:, -1:], **TOL)


def test_cache_positions_of_the_paper_example():
    # cache [0, 1, 2, 3, 6, 7, 8] decoding token 9: positions 0..7, not 0, 1, 2, 3, 6, 7, 8, 9
    q, k, v = random_heads(5, 10)
    cache, steps = decode(q, k, v, n_sink=4, window=4, positions="cache")
    assert cache.positions.tolist() == [0, 1, 2, 3, 6, 7, 8, 9]
    shifted, _ = mk.rotary_attention(q[:, 9:], k[:, cache.positions], v[:, cache.positions], [107],
                                     np.arange(100, 108))  # positions 100..107: the same distances
    np.testing.assert_allclose(steps[-1][0], shifted, **TOL)
    original, _ = mk.rotary_attention(q[:, 9:], k[:, cache.positions], v[:, cache.positions], [9], cache.positions)
    assert not np.allclose(steps[-1][0], original)  # the text's positions give another answer


@pytest.mark.parametrize("call, message", [
    (lambda c: mk.sink_decode_step(np.ones((2, 1, 4)), np.ones((1, 1, 4)), np.ones((1, 1, 4)), object()),
     r"^expected a SinkCache, got object$"),
    (lambda c: mk.sink_decode_step(np.ones((2, 1, 4)), np.ones((1, 1, 4)), np.ones((1, 1, 4)), c, "text"),
     r"^positions must be 'cache' or 'original', got 'text'$"),
    (lambda c: mk.sink_decode_step(np.ones((2, 2, 4)), np.ones((1, 2, 4)), np.ones((1, 2, 4)), c),
     r"^expected q \(h, 1, d_h\) and k, v \(h_kv, 1, d_h\) for one new token, got \(2, 2, 4\) and \(1, 2, 4\)$"),
    (lambda c: c.append(np.ones((1, 3)), np.ones((1, 3))),
     r"^expected k and v of the same shape \(h_kv, t, d_h\), got \(1, 3\) and \(1, 3\)$"),
])
def test_decode_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call(mk.SinkCache(2, 3))


def test_cache_errors():
    cache = mk.SinkCache(1, 2)
    cache.append(np.ones((2, 1, 4)), np.ones((2, 1, 4)))
    with pytest.raises(ValueError, match=r"^expected k and v of shape \(2, t, 4\) like the cached ones, got \(1, 1, 4\)$"):
        cache.append(np.ones((1, 1, 4)), np.ones((1, 1, 4)))
    with pytest.raises(ValueError, match=r"^n_sink must be a non-negative integer, got -1$"):
        mk.SinkCache(-1, 2)
    with pytest.raises(ValueError, match=r"^window must be a positive integer, got 0$"):
        mk.SinkCache(4, 0)
    with pytest.raises(ValueError, match=r"^n_keys \(2\) must be at least n_queries \(3\)"):
        mk.sink_mask(3, 1, 2, n_keys=2)


# ---------------------------------------------------------------------------------------------
# Learned sink logits (gpt-oss)
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(seed=st.integers(0, 2**31), n=st.integers(1, 6), s=st.integers(1, 6))
def test_sink_softmax_is_a_softmax_with_one_extra_key_of_value_zero(seed, n, s):
    rng = np.random.default_rng(seed)
    scores, sink, v = rng.standard_normal((3, n, s)) * 3, rng.standard_normal(3) * 3, rng.standard_normal((3, s, 5))
    weights = mk.sink_softmax(scores, sink)
    extended = np.concatenate([scores, np.broadcast_to(sink[:, None, None], (3, n, 1))], axis=-1)  # (h, n, s + 1)
    reference = mk.softmax(extended) @ np.concatenate([v, np.zeros((3, 1, 5))], axis=1)  # the extra key's value is 0
    np.testing.assert_allclose(weights @ v, reference, **TOL)
    p_sink = np.exp(sink[:, None]) / (np.exp(sink[:, None]) + np.exp(scores).sum(-1))
    np.testing.assert_allclose(weights.sum(-1), 1 - p_sink, **TOL)


def test_sink_softmax_limits_and_masks():
    scores = np.random.default_rng(1).standard_normal((2, 3, 4))
    np.testing.assert_allclose(mk.sink_softmax(scores, [-1e3, -1e3]), mk.softmax(scores), **TOL)  # no sink
    masked = mk.sink_softmax(scores, [0.0, 0.0], mask=np.zeros((3, 4), dtype=bool))
    assert np.array_equal(masked, np.zeros_like(scores))  # nothing to see: all weight on the sink


def test_sink_softmax_errors():
    with pytest.raises(ValueError, match=r"^expected scores \(\.\.\., h, n, s\) and sink_logits \(h,\), got \(2, 3, 4\) and \(3,\)$"):
        mk.sink_softmax(np.ones((2, 3, 4)), np.ones(3))
