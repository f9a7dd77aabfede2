"""Tests for the masks of mha_kit.attention: sliding window, padding, their combinations with the
causal mask, the offset causal mask of a chunk over a cache, and fully masked rows.

References are loops over (query, key) pairs written from the definitions, not from mha_kit.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

TOL = dict(rtol=1e-10, atol=1e-12)
PROPERTY = settings(max_examples=40, deadline=None)


def naive_window(n, w, s):
    """Query i sits at position p = s - n + i and sees keys p - w + 1 .. p (clipped at 0)."""
    mask = np.zeros((n, s), dtype=bool)
    for i in range(n):
        p = s - n + i
        for j in range(max(0, p - w + 1), p + 1):
            mask[i, j] = True
    return mask


def naive_padding(lengths, s, side):
    """Row b is True on the lengths[b] real tokens: the first ones (right) or the last (left)."""
    mask = np.zeros((len(lengths), 1, s), dtype=bool)
    for b, length in enumerate(lengths):
        for j in range(s):
            mask[b, 0, j] = j < length if side == "right" else j >= s - length
    return mask


# ---------------------------------------------------------------------------------------------
# sliding_window_mask
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(n=st.integers(1, 9), extra=st.integers(0, 6), w=st.integers(1, 12), explicit=st.booleans())
def test_sliding_window_matches_the_loops(n, extra, w, explicit):
    s = n + extra
    mask = mk.sliding_window_mask(n, w, s) if explicit or extra else mk.sliding_window_mask(n, w)
    assert mask.shape == (n, s) and mask.dtype == np.bool_
    np.testing.assert_array_equal(mask, naive_window(n, w, s))
    assert mask.sum(axis=1).max() <= w  # no query sees more than the window
    np.testing.assert_array_equal(mask, mask & mk.causal_mask(n, s))  # never a future key


@pytest.mark.parametrize(
    "n, w, s",
    [
        (5, 5, None),  # window as long as the sequence
        (5, 100, None),  # window longer than the sequence
        (2, 7, 7),  # a chunk over a cache, window covers everything
    ],
)
def test_a_window_that_covers_everything_is_causal(n, w, s):
    np.testing.assert_array_equal(mk.sliding_window_mask(n, w, s), mk.causal_mask(n, s))


def test_window_of_one_sees_only_itself():
    np.testing.assert_array_equal(mk.sliding_window_mask(4, 1), np.eye(4, dtype=bool))
    np.testing.assert_array_equal(mk.sliding_window_mask(2, 1, 5), [[0, 0, 0, 1, 0], [0, 0, 0, 0, 1]])


def test_sliding_window_docstring_example():
    expected = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    np.testing.assert_array_equal(mk.sliding_window_mask(4, 2), np.array(expected, dtype=bool))


def test_sliding_window_errors():
    with pytest.raises(ValueError, match=r"^window must be a positive integer, got 0$"):
        mk.sliding_window_mask(3, 0)
    with pytest.raises(ValueError, match=r"^window must be a positive integer, got 2\.5"):
        mk.sliding_window_mask(3, 2.5)
    with pytest.raises(ValueError, match=r"^n_queries must be a positive integer, got -1$"):
        mk.sliding_window_mask(-1, 2)
    with pytest.raises(ValueError, match=r"^n_keys \(2\) must be at least n_queries \(3\): the queries are the last positions$"):
        mk.sliding_window_mask(3, 2, 2)


@PROPERTY
@given(layers=st.integers(1, 5), w=st.integers(1, 5))
def test_stacked_windows_reach_layers_times_w_minus_1_plus_1(layers, w):
    """Information crosses w - 1 positions per layer: after L layers, L (w - 1) + 1 tokens."""
    n = layers * w + 2
    step = mk.sliding_window_mask(n, w).astype(int)
    reach = np.linalg.matrix_power(step, layers) > 0  # (n, n): token j reaches query i
    assert reach[-1].sum() == min(n, layers * (w - 1) + 1)


# ---------------------------------------------------------------------------------------------
# padding_mask, and combinations with the causal mask
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(s=st.integers(1, 8), data=st.data(), side=st.sampled_from(["right", "left"]))
def test_padding_matches_the_loops(s, data, side):
    lengths = data.draw(st.lists(st.integers(1, s), min_size=1, max_size=4))
    mask = mk.padding_mask(lengths, s, side)
    assert mask.shape == (len(lengths), 1, s) and mask.dtype == np.bool_
    np.testing.assert_array_equal(mask, naive_padding(lengths, s, side))
    np.testing.assert_array_equal(mask.sum(axis=-1)[:, 0], lengths)


@pytest.mark.parametrize(
    "lengths, n_keys, side, message",
    [
        ([3, 0], 4, "right", r"^every length must be in 1 \.\. n_keys \(4\), got \[3, 0\]$"),  # an empty sequence
        ([5], 4, "left", r"^every length must be in 1 \.\. n_keys \(4\), got \[5\]$"),  # longer than the batch
        ([2.0], 4, "right", r"^lengths must be a non-empty 1-D sequence of integers, got \[2\.0\]$"),
        ([], 4, "right", r"^lengths must be a non-empty 1-D sequence of integers, got \[\]$"),
        ([[2]], 4, "right", r"^lengths must be a non-empty 1-D sequence of integers, got \[\[2\]\]$"),
        ([2], 4, "middle", r"^side must be 'right' or 'left', got 'middle'$"),
        ([2], 0, "right", r"^n_keys must be a positive integer, got 0$"),
    ],
)
def test_padding_errors(lengths, n_keys, side, message):
    with pytest.raises(ValueError, match=message):
        mk.padding_mask(lengths, n_keys, side)


def test_right_padding_and_causal_leaves_no_empty_row():
    mask = mk.padding_mask([2, 4], 4) & mk.causal_mask(4)  # (2, 1, 4) & (4, 4) -> (2, 4, 4)
    assert mask.shape == (2, 4, 4)
    assert mask.any(axis=-1).all()  # a padded query still sees the real tokens before it
    np.testing.assert_array_equal(mask[0], [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]])


def test_left_padding_and_causal_empties_the_padded_rows():
    mask = mk.padding_mask([2, 4], 4, "left") & mk.causal_mask(4)
    np.testing.assert_array_equal(mask.any(axis=-1), [[False, False, True, True], [True] * 4])


@PROPERTY
@given(layer_seed=st.integers(0, 2**32 - 1), lengths=st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_right_padded_batch_equals_each_sequence_alone(layer_seed, lengths):
    """The padded tokens change nothing for the real ones: run each sequence unpadded and compare."""
    rng = np.random.default_rng(layer_seed)
    n, d, h = 5, 6, 2
    w = mk.init_weights(mk.AttentionConfig(d, h), seed=layer_seed % 1000)
    x = rng.standard_normal((len(lengths), n, d))  # padding rows hold random numbers: they must not leak
    out, weights = mk.multi_head_attention(x, *w, h, causal=True, mask=mk.padding_mask(lengths, n))
    assert weights.shape == (len(lengths), h, n, n)
    for b, length in enumerate(lengths):
        alone, _ = mk.multi_head_attention(x[b, :length], *w, h, causal=True)
        np.testing.assert_allclose(out[b, :length], alone, **TOL)
        np.testing.assert_array_equal(weights[b, :, :, length:], 0.0)  # no weight on padding


# ---------------------------------------------------------------------------------------------
# The offset causal mask: a chunk of new tokens over a cache
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(n_cached=st.integers(0, 6), chunk=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_chunk_over_a_cache_equals_the_last_rows_of_the_full_pass(n_cached, chunk, seed):
    cfg = mk.AttentionConfig(8, 4, 2)
    w = mk.init_weights(cfg, seed=seed % 1000)
    x = np.random.default_rng(seed).standard_normal((n_cached + chunk, cfg.d_model))
    full, _ = mk.multi_head_attention(x, *w, 4, 2, causal=True)
    cache = mk.KVCache(cfg.num_kv_heads, cfg.head_dim, max_len=n_cached + chunk)
    if n_cached:
        mk.cached_attention(x[:n_cached], *w, 4, cache)
    out, weights = mk.cached_attention(x[n_cached:], *w, 4, cache)  # uses causal_mask(chunk, s)
    np.testing.assert_allclose(out, full[n_cached:], **TOL)
    np.testing.assert_array_equal(weights > 0, np.broadcast_to(mk.causal_mask(chunk, n_cached + chunk), weights.shape))


def test_square_causal_mask_over_a_cache_is_wrong():
    """The mistake the offset prevents: the chunk's first query would lose the cached keys it may see."""
    offset, square = mk.causal_mask(2, 5), np.tril(np.ones((2, 5), dtype=bool))
    np.testing.assert_array_equal(offset, [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    assert square.sum() == 3 and offset.sum() == 9


# ---------------------------------------------------------------------------------------------
# masked_softmax and fully masked rows
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 6)), seed=st.integers(0, 2**32 - 1))
def test_masked_softmax_matches_the_loops(shape, seed):
    rng = np.random.default_rng(seed)
    scores, mask = rng.standard_normal(shape), rng.random(shape) < 0.6
    p = mk.masked_softmax(scores, mask, empty_rows="zero")
    for idx in np.ndindex(shape[:-1]):
        row, keep = scores[idx], mask[idx]
        expected = np.zeros(shape[-1])
        if keep.any():
            e = np.exp(row[keep] - row[keep].max())
            expected[keep] = e / e.sum()
        np.testing.assert_allclose(p[idx], expected, **TOL)
    if mask.any(axis=-1).all():  # with no empty row, both policies agree
        np.testing.assert_array_equal(mk.masked_softmax(scores, mask), p)


def test_fully_masked_row_raises_or_gives_zeros():
    scores = np.array([[1.0, 2.0], [3.0, 4.0]])
    mask = np.array([[True, True], [False, False]])
    with pytest.raises(ValueError, match=r"^softmax: a row along axis -1 is entirely -inf \(every key masked\)"):
        mk.masked_softmax(scores, mask)
    p = mk.masked_softmax(scores, mask, empty_rows="zero")
    np.testing.assert_allclose(p[0], mk.softmax(scores[0]), **TOL)
    np.testing.assert_array_equal(p[1], [0.0, 0.0])


def test_naive_softmax_of_a_fully_masked_row_is_nan():
    """Why the guard exists: exp(-inf - (-inf)) is exp(nan)."""
    row = np.array([-np.inf, -np.inf])
    with np.errstate(invalid="ignore"):
        naive = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
    assert np.isnan(naive).all()


def test_sdpa_zero_policy_gives_zero_output_for_empty_rows():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    mask = np.array([[False] * 5, [True, True, False, False, False], [True] * 5])
    out, weights = mk.scaled_dot_product_attention(q, k, v, mask, empty_rows="zero")
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_array_equal(weights[0], 0.0)
    for i in (1, 2):
        ref, _ = mk.scaled_dot_product_attention(q[i:i + 1], k, v, mask[i:i + 1])
        np.testing.assert_allclose(out[i], ref[0], **TOL)


def test_masked_softmax_errors():
    scores = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"^empty_rows must be 'raise' or 'zero', got 'nan'$"):
        mk.masked_softmax(scores, np.ones((2, 3), dtype=bool), empty_rows="nan")
    with pytest.raises(ValueError, match=r"^empty_rows must be 'raise' or 'zero', got 'zeros'$"):
        mk.scaled_dot_product_attention(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 3)), empty_rows="zeros")  # no mask
    with pytest.raises(ValueError, match=r"^mask must be boolean \(True = may attend\), got dtype float64$"):
        mk.masked_softmax(scores, np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"^mask of shape \(3, 3\) does not broadcast to scores \(2, 3\)$"):
        mk.masked_softmax(scores, np.ones((3, 3), dtype=bool))
    x, w, cfg = mk.toy_example()
    with pytest.raises(ValueError, match=r"^mask of shape \(2, 3, 3\) does not broadcast to scores \(3, 3\)$"):
        mk.multi_head_attention(x, *w, cfg.num_heads, mask=np.ones((2, 3, 3), dtype=bool))  # a layer's mask adds no axis


def test_masked_softmax_mask_may_add_leading_axes_like_numpy():
    scores = np.random.default_rng(5).standard_normal((2, 3))
    mask = np.stack([np.ones((2, 3), dtype=bool), mk.causal_mask(2, 3)])  # (2, 2, 3)
    p = mk.masked_softmax(scores, mask)
    assert p.shape == (2, 2, 3)
    np.testing.assert_allclose(p[0], mk.softmax(scores), **TOL)
    np.testing.assert_allclose(p[1], mk.masked_softmax(scores, mask[1]), **TOL)


# ---------------------------------------------------------------------------------------------
# Half precision: why -inf and "large negative" fills go wrong
# ---------------------------------------------------------------------------------------------

def test_float16_turns_large_negative_fills_into_minus_inf():
    with np.errstate(over="ignore"):
        assert np.float16(-1e9) == -np.inf  # the classic -1e9 fill does not fit in float16
        assert np.float16(np.finfo(np.float32).min) == -np.inf  # nor does float32's lowest value
        lowest = np.finfo(np.float16).min
        assert lowest == -65504.0
        assert np.float16(lowest) + np.float16(lowest) == -np.inf  # two additive masks overflow
    assert np.float16(-1e4) == -10000.0  # BERT's -10,000 still fits
