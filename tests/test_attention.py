"""Tests for mha_kit.attention: softmax, masks, scaled dot-product, MHA / GQA / MQA.

References are written out here independently of mha_kit: per-head loops over weight slices,
explicit repetition of key-value heads, and a plain-numpy softmax.
"""
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

TOL = dict(rtol=1e-10, atol=1e-12)
PROPERTY = settings(max_examples=40, deadline=None)


# ---------------------------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------------------------

def reference_attention(q, k, v, mask=None):
    """One head, plain numpy: q (n, d_h), k (s, d_h), v (s, d_v), mask (n, s) -> (n, d_v), (n, s)."""
    scores = q @ k.T / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights


def reference_layer(x, w_q, w_k, w_v, w_o, h, h_kv, causal=False):
    """Query head i reads KV head i // g, each head built from its own column slice."""
    n, d_h, g = x.shape[0], w_q.shape[1] // h, h // h_kv
    mask = np.tril(np.ones((n, n), dtype=bool)) if causal else None
    heads = []
    for i in range(h):
        j = i // g  # the KV head this query head shares
        q = x @ w_q[:, i * d_h:(i + 1) * d_h]
        k = x @ w_k[:, j * d_h:(j + 1) * d_h]
        v = x @ w_v[:, j * d_h:(j + 1) * d_h]
        heads.append(reference_attention(q, k, v, mask)[0])
    return np.concatenate(heads, axis=-1) @ w_o


@st.composite
def layers(draw, max_kv=3, max_group=3, max_tokens=6):
    """A random layer: shape letters, token vectors x (n, d) and weights."""
    h_kv = draw(st.integers(1, max_kv))
    g = draw(st.integers(1, max_group))
    d_h = draw(st.integers(1, 4))
    d = draw(st.integers(1, 8))
    n = draw(st.integers(1, max_tokens))
    seed = draw(st.integers(0, 2**32 - 1))
    h = h_kv * g
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    weights = (rng.standard_normal((d, h * d_h)), rng.standard_normal((d, h_kv * d_h)),
               rng.standard_normal((d, h_kv * d_h)), rng.standard_normal((h * d_h, d)))
    return dict(h=h, h_kv=h_kv, g=g, d_h=d_h, d=d, n=n, x=x, weights=weights, rng=rng)


# ---------------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(shape=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 6)),
       axis=st.sampled_from([0, 1, -1]), scale=st.sampled_from([1.0, 30.0, 1e4]),
       seed=st.integers(0, 2**32 - 1))
def test_softmax_is_a_distribution(shape, axis, scale, seed):
    x = scale * np.random.default_rng(seed).standard_normal(shape)
    p = mk.softmax(x, axis=axis)
    assert p.shape == x.shape
    assert np.all(p >= 0) and np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=1e-12)
    # shifting a row by a constant changes nothing
    np.testing.assert_allclose(mk.softmax(x + 7.0, axis=axis), p, rtol=1e-9, atol=1e-15)


def test_softmax_matches_the_definition():
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    expected = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(mk.softmax(x), expected, **TOL)
    np.testing.assert_allclose(mk.softmax(x[0].tolist()), expected[0], **TOL)  # plain lists work


@pytest.mark.parametrize(
    "x, expected",
    [
        ([1e4, -1e4, 0.0], [1.0, 0.0, 0.0]),  # exp(1e4) overflows without the shift
        ([1e4, 1e4], [0.5, 0.5]),  # two huge equal scores
        ([-1e4, -1e4, -1e4, -1e4], [0.25] * 4),  # all very negative: exp underflows without the shift
        ([0.0, -np.inf, 0.0], [0.5, 0.0, 0.5]),  # a masked score becomes an exact zero
        ([-np.inf, 5.0], [0.0, 1.0]),  # one survivor takes all the weight
    ],
)
def test_softmax_is_stable(x, expected):
    p = mk.softmax(np.array(x))
    np.testing.assert_array_equal(p[np.array(expected) == 0], 0.0)
    np.testing.assert_allclose(p, expected, **TOL)


@pytest.mark.parametrize("dtype, result", [(np.float32, np.float32), (np.float64, np.float64),
                                           (np.int64, np.float64), (np.float16, np.float32)])
def test_softmax_dtype(dtype, result):
    assert mk.softmax(np.array([1, 2], dtype=dtype)).dtype == result


@pytest.mark.parametrize(
    "x",
    [
        [[-np.inf, -np.inf]],  # one fully masked row
        [[0.0, 1.0], [-np.inf, -np.inf]],  # a good row does not save a bad one
    ],
)
def test_softmax_refuses_fully_masked_rows(x):
    with pytest.raises(ValueError, match=r"^softmax: a row along axis -1 is entirely -inf \(every key masked\)"):
        mk.softmax(np.array(x))


@pytest.mark.parametrize("x", [[0.0, np.nan], [np.nan, np.nan], [1.0, np.inf], [np.nan, -np.inf]])
def test_softmax_refuses_nan_and_plus_inf(x):
    with pytest.raises(ValueError, match=r"^softmax input contains NaN or \+inf$"):
        mk.softmax(np.array(x))


@pytest.mark.parametrize("x, axis, shape", [(np.zeros((2, 0)), -1, "(2, 0)"), (np.zeros((0, 3)), 0, "(0, 3)"),
                                            (np.float64(1.0), -1, "()")])
def test_softmax_refuses_an_axis_without_scores(x, axis, shape):
    with pytest.raises(ValueError, match=rf"^softmax needs at least one score along axis {axis}, got shape {re.escape(shape)}$"):
        mk.softmax(x, axis=axis)


# ---------------------------------------------------------------------------------------------
# causal_mask and the place of the mask
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "n, s",
    [
        (1, 1),  # one token
        (4, None),  # square: lower triangle
        (4, 4),  # the same, given explicitly
        (1, 5),  # one decoded token sees the whole cache
        (2, 4),  # the docstring's example
        (3, 7),  # a chunk of 3 new tokens after 4 cached
    ],
)
def test_causal_mask_semantics(n, s):
    mask = mk.causal_mask(n, s)
    s = n if s is None else s
    assert mask.shape == (n, s) and mask.dtype == np.bool_
    for i in range(n):
        for j in range(s):
            assert mask[i, j] == (j <= s - n + i)  # row i sees keys 0 .. s - n + i


def test_causal_mask_docstring_example():
    np.testing.assert_array_equal(mk.causal_mask(2, 4), [[True, True, True, False], [True, True, True, True]])


def test_causal_mask_errors():
    with pytest.raises(ValueError, match=r"^n_keys \(2\) must be at least n_queries \(3\): the queries are the last positions$"):
        mk.causal_mask(3, 2)
    with pytest.raises(ValueError, match=r"^n_queries must be a positive integer, got 0$"):
        mk.causal_mask(0)
    with pytest.raises(ValueError, match=r"^n_keys must be a positive integer, got 2\.0"):
        mk.causal_mask(2, 2.0)


@PROPERTY
@given(n=st.integers(2, 8), seed=st.integers(0, 2**32 - 1))
def test_masking_before_softmax_keeps_rows_summing_to_one_after_does_not(n, seed):
    """The article's common mistake: zeroing weights after softmax leaves rows that sum to < 1."""
    scores = np.random.default_rng(seed).standard_normal((n, n))
    mask = mk.causal_mask(n)
    before = mk.softmax(np.where(mask, scores, -np.inf))
    after = np.where(mask, mk.softmax(scores), 0.0)
    np.testing.assert_allclose(before.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(before[~mask], 0.0)
    row_sums = after.sum(axis=-1)
    assert np.all(row_sums[:-1] < 1 - 1e-12)  # every row that hides a key loses weight
    np.testing.assert_allclose(row_sums[-1], 1.0, rtol=1e-12)  # the last row hides nothing


# ---------------------------------------------------------------------------------------------
# scaled_dot_product_attention
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "n, s, d_h, d_v, masked",
    [
        (1, 1, 1, 1, False),  # smallest
        (3, 3, 2, 2, True),  # toy head, causal
        (2, 5, 4, 3, True),  # 2 queries at the end of 5 keys, value size != key size
        (4, 6, 8, 8, False),  # rectangular scores
    ],
)
def test_sdpa_matches_reference(n, s, d_h, d_v, masked):
    rng = np.random.default_rng(n * 100 + s)
    q, k, v = rng.standard_normal((n, d_h)), rng.standard_normal((s, d_h)), rng.standard_normal((s, d_v))
    mask = mk.causal_mask(n, s) if masked else None
    out, weights = mk.scaled_dot_product_attention(q, k, v, mask)
    ref_out, ref_weights = reference_attention(q, k, v, mask)
    assert out.shape == (n, d_v) and weights.shape == (n, s)
    np.testing.assert_allclose(out, ref_out, **TOL)
    np.testing.assert_allclose(weights, ref_weights, **TOL)


def test_sdpa_broadcasts_batch_axes_and_masks():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((2, 3, 6, 2))
    padding = np.array([True, True, True, True, False, False])  # last two keys are padding, shape (s,)
    out, weights = mk.scaled_dot_product_attention(q, k, v, padding)
    for b in range(2):
        for i in range(3):
            ref = reference_attention(q[b, i], k[b, i], v[b, i], np.broadcast_to(padding, (4, 6)))
            np.testing.assert_allclose(out[b, i], ref[0], **TOL)
    np.testing.assert_array_equal(weights[..., 4:], 0.0)


@PROPERTY
@given(layer=layers())
def test_attention_weights_rows_sum_to_one(layer):
    x, (w_q, w_k, w_v, w_o) = layer["x"], layer["weights"]
    for causal in (False, True):
        _, weights = mk.multi_head_attention(x, w_q, w_k, w_v, w_o, layer["h"], layer["h_kv"], causal=causal)
        assert weights.shape == (layer["h"], layer["n"], layer["n"])
        assert np.all(weights >= 0)
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)


def test_sdpa_errors():
    q, k, v = np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 5))
    with pytest.raises(ValueError, match=r"^q, k, v need at least 2 dimensions \(tokens, features\), got \(4,\), \(3, 4\), \(3, 5\)$"):
        mk.scaled_dot_product_attention(q[0], k, v)
    with pytest.raises(ValueError, match=r"^q and k must share the head size: q \(2, 4\), k \(3, 3\)$"):
        mk.scaled_dot_product_attention(q, k[:, :3], v)
    with pytest.raises(ValueError, match=r"^k and v must hold the same number of keys: k \(3, 4\), v \(2, 5\)$"):
        mk.scaled_dot_product_attention(q, k, v[:2])
    with pytest.raises(ValueError, match=r"^mask must be boolean \(True = may attend\), got dtype int64$"):
        mk.scaled_dot_product_attention(q, k, v, np.ones((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=r"^mask of shape \(3, 3\) does not broadcast to scores \(2, 3\)$"):
        mk.scaled_dot_product_attention(q, k, v, np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match=r"entirely -inf"):  # a query with no visible key
        mk.scaled_dot_product_attention(q, k, v, np.array([[True, True, True], [False, False, False]]))


# ---------------------------------------------------------------------------------------------
# split_heads / merge_heads
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "shape, h",
    [
        ((3, 4), 2),  # toy: (n, d) with 2 heads of 2
        ((5, 12), 3),  # 3 heads of 4
        ((2, 3, 8), 8),  # a batch axis, heads of 1
        ((2, 1, 4, 6), 1),  # two leading axes, one head
    ],
)
def test_split_heads_takes_column_slices(shape, h):
    x = np.arange(np.prod(shape), dtype=float).reshape(shape)
    heads = mk.split_heads(x, h)
    d_h = shape[-1] // h
    assert heads.shape == (*shape[:-2], h, shape[-2], d_h)
    for i in range(h):
        np.testing.assert_array_equal(heads[..., i, :, :], x[..., i * d_h:(i + 1) * d_h])
    np.testing.assert_array_equal(mk.merge_heads(heads), x)


@PROPERTY
@given(batch=st.lists(st.integers(1, 3), max_size=2), n=st.integers(1, 5), h=st.integers(1, 4),
       d_h=st.integers(1, 4))
def test_split_merge_round_trip(batch, n, h, d_h):
    x = np.random.default_rng(n).standard_normal((*batch, n, h * d_h))
    np.testing.assert_array_equal(mk.merge_heads(mk.split_heads(x, h)), x)
    heads = mk.split_heads(x, h)
    np.testing.assert_array_equal(mk.split_heads(mk.merge_heads(heads), h), heads)


def test_split_heads_errors():
    with pytest.raises(ValueError, match=r"^width \(10\) must be divisible by num_heads \(4\)$"):
        mk.split_heads(np.ones((2, 10)), 4)
    with pytest.raises(ValueError, match=r"^num_heads must be a positive integer, got 0$"):
        mk.split_heads(np.ones((2, 10)), 0)


# ---------------------------------------------------------------------------------------------
# Multi-head, grouped-query and multi-query attention
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(layer=layers(max_kv=5, max_group=1), causal=st.booleans())
def test_h_heads_equal_h_single_head_calls(layer, causal):
    """MHA = h separate scaled_dot_product_attention calls, concatenated, times W_O."""
    x, (w_q, w_k, w_v, w_o), h, d_h = layer["x"], layer["weights"], layer["h"], layer["d_h"]
    mask = mk.causal_mask(x.shape[0]) if causal else None
    cols = [slice(i * d_h, (i + 1) * d_h) for i in range(h)]  # head i owns columns i*d_h .. (i+1)*d_h - 1
    heads = [mk.scaled_dot_product_attention(x @ w_q[:, c], x @ w_k[:, c], x @ w_v[:, c], mask)[0] for c in cols]
    out, _ = mk.multi_head_attention(x, w_q, w_k, w_v, w_o, h, causal=causal)
    np.testing.assert_allclose(out, np.concatenate(heads, axis=-1) @ w_o, **TOL)


@PROPERTY
@given(layer=layers(), causal=st.booleans())
def test_layer_matches_per_head_reference(layer, causal):
    x, w = layer["x"], layer["weights"]
    out, _ = mk.multi_head_attention(x, *w, layer["h"], layer["h_kv"], causal=causal)
    assert out.shape == x.shape
    np.testing.assert_allclose(out, reference_layer(x, *w, layer["h"], layer["h_kv"], causal), **TOL)


@PROPERTY
@given(layer=layers(max_kv=4, max_group=1), causal=st.booleans())
def test_gqa_with_h_kv_equal_h_is_mha(layer, causal):
    x, w, h = layer["x"], layer["weights"], layer["h"]
    mha, mha_weights = mk.multi_head_attention(x, *w, h, None, causal=causal)
    gqa, gqa_weights = mk.multi_head_attention(x, *w, h, h, causal=causal)
    np.testing.assert_array_equal(gqa, mha)
    np.testing.assert_array_equal(gqa_weights, mha_weights)
    # and grouped_attention with h_kv == h is plain batched attention over the heads
    q, k, v = (mk.split_heads(x @ w_i, h) for w_i in w[:3])
    np.testing.assert_allclose(mk.grouped_attention(q, k, v)[0], mk.scaled_dot_product_attention(q, k, v)[0], **TOL)


@PROPERTY
@given(layer=layers(max_group=4), causal=st.booleans())
def test_grouped_attention_equals_explicit_repeat(layer, causal):
    """Query head i reads KV head i // g: repeat K and V g times, as Hugging Face's repeat_kv does."""
    x, (w_q, w_k, w_v, _), h, h_kv, g = layer["x"], layer["weights"], layer["h"], layer["h_kv"], layer["g"]
    q, k, v = mk.split_heads(x @ w_q, h), mk.split_heads(x @ w_k, h_kv), mk.split_heads(x @ w_v, h_kv)
    mask = mk.causal_mask(x.shape[0]) if causal else None
    k_full = np.stack([k[i // g] for i in range(h)])  # (h, n, d_h): [K0]*g + [K1]*g + ...
    v_full = np.stack([v[i // g] for i in range(h)])
    out, weights = mk.grouped_attention(q, k, v, mask)
    ref_out, ref_weights = mk.scaled_dot_product_attention(q, k_full, v_full, mask)
    np.testing.assert_allclose(out, ref_out, **TOL)
    np.testing.assert_allclose(weights, ref_weights, **TOL)


@PROPERTY
@given(layer=layers(max_kv=1, max_group=6), causal=st.booleans())
def test_one_kv_head_is_mqa_by_hand(layer, causal):
    x, (w_q, w_k, w_v, w_o), h, d_h = layer["x"], layer["weights"], layer["h"], layer["d_h"]
    k, v = x @ w_k, x @ w_v  # the single shared key and value, (n, d_h)
    mask = np.tril(np.ones((x.shape[0],) * 2, dtype=bool)) if causal else None
    heads = [reference_attention(x @ w_q[:, i * d_h:(i + 1) * d_h], k, v, mask)[0] for i in range(h)]
    out, _ = mk.multi_head_attention(x, w_q, w_k, w_v, w_o, h, 1, causal=causal)
    np.testing.assert_allclose(out, np.concatenate(heads, axis=-1) @ w_o, **TOL)


@PROPERTY
@given(layer=layers(max_tokens=7), split=st.integers(1, 6))
def test_causal_outputs_ignore_later_tokens(layer, split):
    x, w = layer["x"], layer["weights"]
    split = min(split, x.shape[0])
    changed = x.copy()
    changed[split:] = layer["rng"].standard_normal(changed[split:].shape) * 10
    before, _ = mk.multi_head_attention(x, *w, layer["h"], layer["h_kv"], causal=True)
    after, _ = mk.multi_head_attention(changed, *w, layer["h"], layer["h_kv"], causal=True)
    np.testing.assert_array_equal(after[:split], before[:split])


def test_without_the_mask_earlier_outputs_do_change():
    # The control for the property above: the same change moves token 0 when nothing is masked.
    x, w, cfg = mk.toy_example()
    changed = x.copy()
    changed[2] += 5.0
    for causal, moves in ((True, False), (False, True)):
        before, _ = mk.multi_head_attention(x, *w, cfg.num_heads, causal=causal)
        after, _ = mk.multi_head_attention(changed, *w, cfg.num_heads, causal=causal)
        assert (not np.allclose(after[0], before[0])) == moves


def test_batch_axis_equals_separate_calls():
    cfg = mk.AttentionConfig(8, 4, 2)
    w = mk.init_weights(cfg, seed=5)
    x = np.random.default_rng(5).standard_normal((3, 4, 8))  # 3 sequences of 4 tokens
    out, weights = mk.multi_head_attention(x, *w, 4, 2, causal=True)
    assert out.shape == (3, 4, 8) and weights.shape == (3, 4, 4, 4)
    for b in range(3):
        np.testing.assert_allclose(out[b], mk.multi_head_attention(x[b], *w, 4, 2, causal=True)[0], **TOL)


def test_grouped_attention_accepts_a_broadcastable_mask():
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((4, 3, 2)), rng.standard_normal((2, 5, 2)), rng.standard_normal((2, 5, 2))
    padding = np.array([[True, True, True, False, False]])  # (1, s): the same keys hidden for every query
    out, weights = mk.grouped_attention(q, k, v, padding)
    full, _ = mk.grouped_attention(q, k, v, np.broadcast_to(padding, (3, 5)))
    np.testing.assert_array_equal(out, full)
    np.testing.assert_array_equal(weights[..., 3:], 0.0)


def test_decode_attention_is_the_single_query_case():
    rng = np.random.default_rng(11)
    q, k, v = rng.standard_normal((6, 4)), rng.standard_normal((2, 9, 4)), rng.standard_normal((2, 9, 4))
    out = mk.decode_attention(q, k, v)
    assert out.shape == (6, 4)
    for i in range(6):  # g = 3: heads 0-2 read KV head 0, heads 3-5 read KV head 1
        np.testing.assert_allclose(out[i], reference_attention(q[i:i + 1], k[i // 3], v[i // 3])[0][0], **TOL)


def test_toy_example_shapes():
    x, weights, cfg = mk.toy_example()
    out, attn = mk.multi_head_attention(x, *weights, cfg.num_heads)
    assert x.shape == out.shape == (3, 4)  # same shape in and out, so layers stack
    assert attn.shape == (2, 3, 3)
    assert (cfg.d_model, cfg.num_heads, cfg.head_dim) == (4, 2, 2)
    again = mk.toy_example()
    np.testing.assert_array_equal(again[0], x)  # seeded: the book's numbers are reproducible


@pytest.mark.parametrize(
    "d, h, h_kv, d_h",
    [
        (4, 2, None, None),  # toy: 2 heads of 2
        (12, 6, 2, None),  # GQA: K and V are 2 heads wide
        (10, 4, 1, 3),  # MQA with an explicit head size, h * d_h != d
    ],
)
def test_init_weights_shapes_seed_and_scale(d, h, h_kv, d_h):
    cfg = mk.AttentionConfig(d, h, h_kv, d_h)
    w_q, w_k, w_v, w_o = mk.init_weights(cfg, seed=3)
    q_width, kv_width = h * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    assert (w_q.shape, w_k.shape, w_v.shape, w_o.shape) == ((d, q_width), (d, kv_width), (d, kv_width), (q_width, d))
    for a, b in zip((w_q, w_k, w_v, w_o), mk.init_weights(cfg, seed=3)):
        np.testing.assert_array_equal(a, b)  # same seed, same weights
    assert not np.array_equal(mk.init_weights(cfg, seed=4).w_q, w_q)
    assert mk.init_weights(cfg, dtype=np.float32).w_o.dtype == np.float32


def test_init_weights_variance_is_one_over_fan_in():
    w_q, _, _, w_o = mk.init_weights(mk.AttentionConfig(256, 4), seed=0)
    assert abs(w_q.var() * 256 - 1) < 0.05  # 65,536 draws: the sample variance is within a few %
    assert abs(w_o.var() * 256 - 1) < 0.05


@pytest.mark.parametrize("bad", [mk.PRESETS["deepseek-v2"], (4, 2), None])  # an MLA config, a tuple, nothing
def test_init_weights_refuses_other_configs(bad):
    with pytest.raises(ValueError, match=r"^expected an AttentionConfig, got "):
        mk.init_weights(bad)


# ---------------------------------------------------------------------------------------------
# W_V W_O per head, and mean-pooling KV heads
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(layer=layers(), causal=st.booleans())
def test_value_output_matrices_rebuild_the_output(layer, causal):
    """out = sum over heads of weights_h @ x @ (W_V[h // g] W_O[h])."""
    x, w, h, h_kv = layer["x"], layer["weights"], layer["h"], layer["h_kv"]
    out, weights = mk.multi_head_attention(x, *w, h, h_kv, causal=causal)
    w_vo = mk.value_output_matrices(w[2], w[3], h, h_kv)
    assert w_vo.shape == (h, x.shape[1], x.shape[1])
    rebuilt = sum(weights[i] @ x @ w_vo[i] for i in range(h))
    np.testing.assert_allclose(rebuilt, out, rtol=1e-9, atol=1e-10)


def test_value_output_matrices_default_is_mha():
    rng = np.random.default_rng(2)
    w_v, w_o = rng.standard_normal((6, 6)), rng.standard_normal((6, 5))
    w_vo = mk.value_output_matrices(w_v, w_o, 3)
    for i in range(3):
        np.testing.assert_allclose(w_vo[i], w_v[:, 2 * i:2 * i + 2] @ w_o[2 * i:2 * i + 2], **TOL)


@pytest.mark.parametrize(
    "w_v_shape, w_o_shape, h, h_kv",
    [
        ((6, 4), (8, 6), 4, 3),  # 4 heads cannot share 3 KV heads
        ((6, 4), (6, 6), 4, 2),  # w_o has 6 rows, 4 heads of 2 need 8
        ((6, 5), (10, 6), 4, 2),  # 5 columns do not split into 2 KV heads
    ],
)
def test_value_output_matrices_errors(w_v_shape, w_o_shape, h, h_kv):
    with pytest.raises(ValueError, match=rf"^w_v \({w_v_shape[0]}, {w_v_shape[1]}\) and w_o .* do not fit num_heads={h}, num_kv_heads={h_kv}$"):
        mk.value_output_matrices(np.ones(w_v_shape), np.ones(w_o_shape), h, h_kv)


@PROPERTY
@given(h_kv=st.integers(1, 4), g=st.integers(1, 4), d_h=st.integers(1, 3), d=st.integers(1, 5),
       seed=st.integers(0, 2**32 - 1))
def test_mean_pool_kv_heads(h_kv, g, d_h, d, seed):
    h = h_kv * g
    w = np.random.default_rng(seed).standard_normal((d, h * d_h))
    pooled = mk.mean_pool_kv_heads(w, h, h_kv)
    assert pooled.shape == (d, h_kv * d_h)
    for j in range(h_kv):  # KV head j averages query-side heads j*g .. j*g + g - 1
        group = [w[:, i * d_h:(i + 1) * d_h] for i in range(j * g, (j + 1) * g)]
        np.testing.assert_allclose(pooled[:, j * d_h:(j + 1) * d_h], sum(group) / g, **TOL)


def test_mean_pool_identity_cases():
    w = np.random.default_rng(0).standard_normal((4, 8))
    np.testing.assert_allclose(mk.mean_pool_kv_heads(w, 4, 4), w, **TOL)  # h_kv == h: nothing to pool
    np.testing.assert_allclose(mk.mean_pool_kv_heads(np.tile(w[:, :2], 4), 4, 1), w[:, :2], **TOL)  # equal heads


def test_mean_pool_errors():
    with pytest.raises(ValueError, match=r"^num_heads \(4\) must be divisible by num_kv_heads \(3\)$"):
        mk.mean_pool_kv_heads(np.ones((2, 8)), 4, 3)
    with pytest.raises(ValueError, match=r"^expected w of shape \(d, num_heads \* head_dim\) with num_heads=4, got \(2, 6\)$"):
        mk.mean_pool_kv_heads(np.ones((2, 6)), 4, 2)
    with pytest.raises(ValueError, match=r"^expected w of shape .* got \(8,\)$"):
        mk.mean_pool_kv_heads(np.ones(8), 4, 2)
    with pytest.raises(ValueError, match=r"^num_kv_heads must be a positive integer, got None"):
        mk.mean_pool_kv_heads(np.ones((2, 8)), 4, None)


# ---------------------------------------------------------------------------------------------
# Error paths of the layer
# ---------------------------------------------------------------------------------------------

D, H, H_KV, D_H = 6, 4, 2, 3
X = np.ones((5, D))
W_Q, W_K, W_V, W_O = np.ones((D, H * D_H)), np.ones((D, H_KV * D_H)), np.ones((D, H_KV * D_H)), np.ones((H * D_H, D))


@pytest.mark.parametrize(
    "args, message",
    [
        ((X, W_Q, W_K, W_V, W_O, H, 3), r"^num_heads \(4\) must be divisible by num_kv_heads \(3\)$"),
        ((X, W_Q, W_K, W_V, W_O, 0, H_KV), r"^num_heads must be a positive integer, got 0$"),
        ((X, W_Q, W_K, W_V, W_O, H, 2.0), r"^num_kv_heads must be a positive integer, got 2\.0"),
        ((X[0], W_Q, W_K, W_V, W_O, H, H_KV), r"^expected x of shape \(n, d\) \(optionally with leading batch axes\), got \(6,\)$"),
        ((X, W_Q[:5], W_K, W_V, W_O, H, H_KV), r"^expected w_q of shape \(6, num_heads \* head_dim\) with num_heads=4, got \(5, 12\)$"),
        ((X, W_Q[:, :10], W_K, W_V, W_O, H, H_KV), r"^expected w_q of shape .* got \(6, 10\)$"),  # 10 columns, 4 heads
        ((X, W_Q[0], W_K, W_V, W_O, H, H_KV), r"^expected w_q of shape .* got \(12,\)$"),
        ((X, W_Q, W_K[:, :3], W_V, W_O, H, H_KV), r"^expected w_k of shape \(6, 6\) = \(d, num_kv_heads \* head_dim\), got \(6, 3\)$"),
        ((X, W_Q, W_K, W_V[:4], W_O, H, H_KV), r"^expected w_v of shape \(6, 6\) = \(d, num_kv_heads \* head_dim\), got \(4, 6\)$"),
        ((X, W_Q, W_K, W_V, W_O[:6], H, H_KV), r"^expected w_o of shape \(12, d_out\) = \(num_heads \* head_dim, d_out\), got \(6, 6\)$"),
        ((X, W_Q, W_K, W_V, W_O[0], H, H_KV), r"^expected w_o of shape \(12, d_out\) .* got \(6,\)$"),
    ],
)
def test_multi_head_attention_errors(args, message):
    with pytest.raises(ValueError, match=message):
        mk.multi_head_attention(*args)


def test_grouped_attention_errors():
    q, k = np.ones((4, 3, 2)), np.ones((2, 5, 2))
    with pytest.raises(ValueError, match=r"^k and v must have the same number of heads, got 2 and 1$"):
        mk.grouped_attention(q, k, np.ones((1, 5, 2)))
    with pytest.raises(ValueError, match=r"^num_heads \(4\) must be divisible by num_kv_heads \(3\)$"):
        mk.grouped_attention(q, np.ones((3, 5, 2)), np.ones((3, 5, 2)))
    with pytest.raises(ValueError, match=r"^mask of shape \(3, 4\) does not broadcast to scores \(3, 5\)$"):
        mk.grouped_attention(q, k, k, np.ones((3, 4), dtype=bool))
    with pytest.raises(ValueError, match=r"^mask must be boolean"):
        mk.grouped_attention(q, k, k, np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"^expected q \(\.\.\., h, n, d_h\) and k, v \(\.\.\., h_kv, s, d_h\), got \(3, 2\), \(2, 5, 2\), \(2, 5, 2\)$"):
        mk.grouped_attention(q[0], k, k)  # a head axis is missing
    with pytest.raises(ValueError, match=r"^expected q .* got \(4, 3, 2\), \(5, 2\), \(2, 5, 2\)$"):
        mk.grouped_attention(q, k[0], k)


def test_decode_attention_errors():
    k = np.ones((2, 5, 2))
    with pytest.raises(ValueError, match=r"^expected q of shape \(h, d_h\) for one new token, got \(2,\)$"):
        mk.decode_attention(np.ones(2), k, k)
    with pytest.raises(ValueError, match=r"^expected q of shape \(h, d_h\) for one new token, got \(4, 1, 2\)$"):
        mk.decode_attention(np.ones((4, 1, 2)), k, k)


# ---------------------------------------------------------------------------------------------
# Cross-attention (context=...) and the layer's mask argument
# ---------------------------------------------------------------------------------------------

def reference_cross(x, context, w_q, w_k, w_v, w_o, h, h_kv, mask=None):
    """Per-head loop: queries from x (n, d), keys and values from context (s, d_context)."""
    d_h, g = w_q.shape[1] // h, h // h_kv
    heads = []
    for i in range(h):
        j = i // g
        q = x @ w_q[:, i * d_h:(i + 1) * d_h]
        k = context @ w_k[:, j * d_h:(j + 1) * d_h]
        v = context @ w_v[:, j * d_h:(j + 1) * d_h]
        heads.append(reference_attention(q, k, v, mask)[0])
    return np.concatenate(heads, axis=-1) @ w_o


@PROPERTY
@given(layer=layers(), s=st.integers(1, 7), d_context=st.integers(1, 6), masked=st.booleans())
def test_cross_attention_matches_per_head_reference(layer, s, d_context, masked):
    x, (w_q, _, _, w_o), h, h_kv, d_h, rng = layer["x"], layer["weights"], layer["h"], layer["h_kv"], layer["d_h"], layer["rng"]
    context = rng.standard_normal((s, d_context))  # a different length and width from x
    w_k, w_v = rng.standard_normal((d_context, h_kv * d_h)), rng.standard_normal((d_context, h_kv * d_h))
    mask = np.arange(s) < max(1, s - 2) if masked else None  # (s,): hide the last context tokens
    out, weights = mk.multi_head_attention(x, w_q, w_k, w_v, w_o, h, h_kv, context=context, mask=mask)
    assert out.shape == x.shape and weights.shape == (h, layer["n"], s)
    ref_mask = None if mask is None else np.broadcast_to(mask, (layer["n"], s))
    np.testing.assert_allclose(out, reference_cross(x, context, w_q, w_k, w_v, w_o, h, h_kv, ref_mask), **TOL)


@PROPERTY
@given(layer=layers(), causal=st.booleans())
def test_context_none_and_context_x_are_self_attention(layer, causal):
    x, w, h, h_kv = layer["x"], layer["weights"], layer["h"], layer["h_kv"]
    self_out, self_weights = mk.multi_head_attention(x, *w, h, h_kv, causal=causal)
    default_out, _ = mk.multi_head_attention(x, *w, h, h_kv, causal=causal, context=None)
    np.testing.assert_array_equal(default_out, self_out)
    explicit_mask = mk.causal_mask(x.shape[0]) if causal else None  # causal is for self-attention only
    cross_out, cross_weights = mk.multi_head_attention(x, *w, h, h_kv, context=x, mask=explicit_mask)
    np.testing.assert_allclose(cross_out, self_out, **TOL)
    np.testing.assert_allclose(cross_weights, self_weights, **TOL)


@PROPERTY
@given(layer=layers(), s=st.integers(2, 7))
def test_cross_attention_ignores_the_order_of_the_context(layer, s):
    """Without positions, permuting the context permutes the weights' columns and leaves outputs alone."""
    x, w, h, h_kv, rng = layer["x"], layer["weights"], layer["h"], layer["h_kv"], layer["rng"]
    context, perm = rng.standard_normal((s, layer["d"])), rng.permutation(s)
    out, weights = mk.multi_head_attention(x, *w, h, h_kv, context=context)
    out_p, weights_p = mk.multi_head_attention(x, *w, h, h_kv, context=context[perm])
    np.testing.assert_allclose(out_p, out, **TOL)
    np.testing.assert_allclose(weights_p, weights[..., perm], **TOL)


def test_cross_attention_with_batch_axes():
    rng = np.random.default_rng(8)
    cfg = mk.AttentionConfig(6, 2)
    w = mk.init_weights(cfg, seed=8)
    x, context = rng.standard_normal((3, 4, 6)), rng.standard_normal((3, 5, 6))
    lengths = mk.padding_mask([5, 2, 3], 5)  # (3, 1, 5): each source has its own length
    out, weights = mk.multi_head_attention(x, *w, 2, context=context, mask=lengths)
    assert out.shape == (3, 4, 6) and weights.shape == (3, 2, 4, 5)
    for b, length in enumerate([5, 2, 3]):
        alone, _ = mk.multi_head_attention(x[b], *w, 2, context=context[b, :length])
        np.testing.assert_allclose(out[b], alone, **TOL)


def test_mask_and_causal_combine():
    x, w, cfg = mk.toy_example()
    window = mk.sliding_window_mask(3, 2)
    both, weights = mk.multi_head_attention(x, *w, cfg.num_heads, causal=True, mask=window)
    alone, _ = mk.multi_head_attention(x, *w, cfg.num_heads, mask=window)  # the window is already causal
    np.testing.assert_array_equal(both, alone)
    np.testing.assert_array_equal(weights[:, 2, 0], 0.0)  # token 2 no longer sees token 0


def test_cross_attention_errors():
    x, w, cfg = mk.toy_example()
    context = np.ones((5, 4))
    with pytest.raises(ValueError, match=r"^causal=True applies to self-attention only: with a context"):
        mk.multi_head_attention(x, *w, cfg.num_heads, causal=True, context=context)
    with pytest.raises(ValueError, match=r"^context must have the leading axes of x: x \(3, 4\), context \(2, 5, 4\)$"):
        mk.multi_head_attention(x, *w, cfg.num_heads, context=np.ones((2, 5, 4)))
    with pytest.raises(ValueError, match=r"^expected context of shape \(s, d_context\) \(optionally with leading batch axes\), got \(4,\)$"):
        mk.multi_head_attention(x, *w, cfg.num_heads, context=np.ones(4))
    with pytest.raises(ValueError, match=r"^expected w_k of shape \(7, 4\) = \(d_context, num_kv_heads \* head_dim\), got \(4, 4\)$"):
        mk.multi_head_attention(x, *w, cfg.num_heads, context=np.ones((5, 7)))
    with pytest.raises(ValueError, match=r"^mask of shape \(3, 3\) does not broadcast to scores \(3, 5\)$"):
        mk.multi_head_attention(x, *w, cfg.num_heads, context=context, mask=np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match=r"^mask must be boolean \(True = may attend\), got dtype int64$"):
        mk.multi_head_attention(x, *w, cfg.num_heads, mask=np.ones((3, 3), dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# Quiet: nothing on stderr (nbgrader zeroes test cells that write there)
# ---------------------------------------------------------------------------------------------

def test_import_and_forward_pass_write_nothing_to_stderr():
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("error")
        import numpy as np
        import mha_kit as mk
        x, w, cfg = mk.toy_example()
        out, _ = mk.multi_head_attention(x, *w, cfg.num_heads, causal=True)
        cache = mk.KVCache(cfg.num_kv_heads, cfg.head_dim, max_len=3)
        mk.cached_attention(x, *w, cfg.num_heads, cache)
        mk.format_bytes(mk.kv_cache_bytes_per_token(mk.PRESETS["llama-3-70b"]))
        print(out.shape)
    """)
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == "(3, 4)\n"
