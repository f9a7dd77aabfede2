"""mha_kit.flash: key-block attention with an online softmax equals the naive form.

The reference is mk.scaled_dot_product_attention, which forms the whole score matrix.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

PROPERTY = settings(max_examples=60, deadline=None)
TOL = 1e-10  # float64


def _qkv(seed, batch, n, s, d_h, d_v):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=batch + (n, d_h)), rng.normal(size=batch + (s, d_h)),
            rng.normal(size=batch + (s, d_v)))


shapes = st.fixed_dictionaries(dict(
    seed=st.integers(0, 2**32 - 1), batch=st.lists(st.integers(1, 3), max_size=2).map(tuple),
    n=st.integers(1, 9), s=st.integers(1, 17), d_h=st.integers(1, 6), d_v=st.integers(1, 5),
))


@PROPERTY
@given(shape=shapes, block_size=st.integers(1, 20))
def test_equals_naive_without_mask(shape, block_size):
    q, k, v = _qkv(**shape)
    out = mk.flash_attention(q, k, v, block_size=block_size)
    expected, _ = mk.scaled_dot_product_attention(q, k, v)
    assert out.shape == expected.shape == shape["batch"] + (shape["n"], shape["d_v"])
    np.testing.assert_allclose(out, expected, rtol=0, atol=TOL)


@PROPERTY
@given(shape=shapes, block_size=st.integers(1, 20), extra=st.integers(0, 8))
def test_equals_naive_with_causal_mask(shape, block_size, extra):
    shape = {**shape, "s": shape["n"] + extra}  # queries are the last n of s positions
    q, k, v = _qkv(**shape)
    mask = mk.causal_mask(shape["n"], shape["s"])
    out = mk.flash_attention(q, k, v, mask, block_size=block_size)
    np.testing.assert_allclose(out, mk.scaled_dot_product_attention(q, k, v, mask)[0], rtol=0, atol=TOL)


@PROPERTY
@given(shape=shapes, block_size=st.integers(1, 20), data=st.data())
def test_equals_naive_with_any_mask_that_leaves_a_key(shape, block_size, data):
    q, k, v = _qkv(**shape)
    n, s = shape["n"], shape["s"]
    bits = data.draw(st.lists(st.booleans(), min_size=n * s, max_size=n * s))
    mask = np.array(bits).reshape(n, s)
    mask[np.arange(n), data.draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n))] = True  # one key per row
    out = mk.flash_attention(q, k, v, mask, block_size=block_size)
    np.testing.assert_allclose(out, mk.scaled_dot_product_attention(q, k, v, mask)[0], rtol=0, atol=TOL)


@pytest.mark.parametrize("n, s, block_size", [
    (8, 8, 3),  # 3 does not divide 8: the last block has 2 keys
    (5, 12, 5),  # 12 = 5 + 5 + 2, queries are the last 5 of 12
    (4, 4, 1),  # one key per block
    (4, 4, 64),  # one block larger than the sequence
    (1, 100, 7),  # a decode step over a long cache
])
def test_causal_grid(n, s, block_size):
    q, k, v = _qkv(7, (2,), n, s, 4, 3)
    mask = mk.causal_mask(n, s)
    expected = mk.scaled_dot_product_attention(q, k, v, mask)[0]
    np.testing.assert_allclose(mk.flash_attention(q, k, v, mask, block_size), expected, rtol=0, atol=TOL)


def test_block_where_a_row_sees_nothing_yet():
    # Causal with block 2: query 0 sees only key 0, so from the second block on its block maxima
    # are -inf. The running state must not turn into NaN.
    q, k, v = _qkv(3, (), 6, 6, 2, 2)
    out = mk.flash_attention(q, k, v, mk.causal_mask(6), block_size=2)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[0], v[0], rtol=0, atol=TOL)  # one key: its value, exactly weighted 1


def test_later_key_with_larger_score_rescales_earlier_blocks():
    # Scores grow block by block, so every block raises the running maximum.
    q = np.ones((1, 1))
    k = np.arange(12.0)[:, None]
    v = np.arange(12.0)[:, None] ** 2
    np.testing.assert_allclose(mk.flash_attention(q, k, v, block_size=4),
                               mk.scaled_dot_product_attention(q, k, v)[0], rtol=0, atol=TOL)


def test_large_scores_do_not_overflow():
    q, k, v = _qkv(5, (), 3, 9, 4, 2)
    out = mk.flash_attention(q * 300, k * 300, v, block_size=2)  # scores in the tens of thousands
    np.testing.assert_allclose(out, mk.scaled_dot_product_attention(q * 300, k * 300, v)[0], rtol=0, atol=TOL)


def test_mask_with_its_own_leading_dimensions_broadcasts_like_the_reference():
    q, k, v = _qkv(11, (), 4, 4, 3, 2)
    mask = np.stack([mk.causal_mask(4), np.ones((4, 4), bool)])[:, None]  # (2, 1, 4, 4)
    out = mk.flash_attention(q, k, v, mask, block_size=3)
    expected = mk.scaled_dot_product_attention(q, k, v, mask)[0]
    assert out.shape == expected.shape == (2, 1, 4, 2)
    np.testing.assert_allclose(out, expected, rtol=0, atol=TOL)


def test_float32_inputs_give_float32_like_the_reference():
    q, k, v = (a.astype(np.float32) for a in _qkv(2, (), 3, 5, 4, 2))
    out = mk.flash_attention(q, k, v, block_size=2)
    expected = mk.scaled_dot_product_attention(q, k, v)[0]
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Rows with no allowed key, and bad input
# ---------------------------------------------------------------------------------------------

def test_fully_masked_row_behaves_as_the_reference():
    q, k, v = _qkv(1, (), 3, 4, 2, 2)
    mask = np.ones((3, 4), bool)
    mask[1] = False  # query 1 may attend to nothing
    with pytest.raises(ValueError) as expected:
        mk.scaled_dot_product_attention(q, k, v, mask)
    with pytest.raises(ValueError, match="entirely -inf") as got:
        mk.flash_attention(q, k, v, mask, block_size=2)
    assert str(got.value) == str(expected.value)


def test_no_keys_at_all_behaves_as_the_reference():
    q, k, v = np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 2))
    with pytest.raises(ValueError, match="at least one score"):
        mk.scaled_dot_product_attention(q, k, v)
    with pytest.raises(ValueError, match="at least one score"):
        mk.flash_attention(q, k, v)


def test_nan_scores_are_refused():
    q, k, v = _qkv(1, (), 2, 3, 2, 2)
    q[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^flash_attention: scores contain NaN or \+inf"):
        mk.flash_attention(q, k, v)


@pytest.mark.parametrize("bad", [0, -3, 2.0, True, None])  # zero, negative, float, bool, missing
def test_bad_block_size(bad):
    q, k, v = _qkv(1, (), 2, 3, 2, 2)
    with pytest.raises(ValueError, match=rf"^block_size must be a positive integer, got {bad!r}"):
        mk.flash_attention(q, k, v, block_size=bad)


def test_head_sizes_must_match():
    with pytest.raises(ValueError, match=r"^q and k must share the head size: q \(2, 3\), k \(4, 2\)$"):
        mk.flash_attention(np.ones((2, 3)), np.ones((4, 2)), np.ones((4, 2)))


def test_keys_and_values_must_match():
    with pytest.raises(ValueError, match=r"^k and v must hold the same number of keys: k \(4, 3\), v \(5, 2\)$"):
        mk.flash_attention(np.ones((2, 3)), np.ones((4, 3)), np.ones((5, 2)))


def test_vectors_are_refused():
    with pytest.raises(ValueError, match=r"^q, k, v need at least 2 dimensions"):
        mk.flash_attention(np.ones(3), np.ones((4, 3)), np.ones((4, 2)))


def test_batch_dimensions_must_broadcast():
    with pytest.raises(ValueError, match=r"^leading \(batch, head\) dimensions of q \(2, 2, 3\), k \(3, 4, 3\) "
                                         r"and v \(3, 4, 2\) do not broadcast$"):
        mk.flash_attention(np.ones((2, 2, 3)), np.ones((3, 4, 3)), np.ones((3, 4, 2)))


def test_mask_shape_and_dtype():
    q, k, v = _qkv(1, (), 2, 3, 2, 2)
    with pytest.raises(ValueError, match=r"^mask of shape \(3, 3\) does not broadcast to scores \(2, 3\)$"):
        mk.flash_attention(q, k, v, np.ones((3, 3), bool))
    with pytest.raises(ValueError, match=r"^mask must be boolean \(True = may attend\), got dtype int64$"):
        mk.flash_attention(q, k, v, np.ones((2, 3), np.int64))


# ---------------------------------------------------------------------------------------------
# The online softmax update on its own
# ---------------------------------------------------------------------------------------------

def test_online_update_over_two_blocks_equals_one_softmax():
    scores = np.array([[1.0, 3.0, -2.0, 5.0, 0.5]])  # (n=1, s=5)
    values = np.arange(10.0).reshape(5, 2)
    m, l, acc = np.full(1, -np.inf), np.zeros(1), np.zeros((1, 2))
    m, l, acc = mk.online_softmax_update(m, l, acc, scores[:, :2], values[:2])
    assert m[0] == 3.0 and l[0] == pytest.approx(1 + np.exp(-2.0))
    m, l, acc = mk.online_softmax_update(m, l, acc, scores[:, 2:], values[2:])
    assert m[0] == 5.0  # the second block raised the maximum
    weights = np.exp(scores - 5.0) / np.exp(scores - 5.0).sum()
    np.testing.assert_allclose(acc / l[:, None], weights @ values, rtol=0, atol=TOL)
    np.testing.assert_allclose(l, np.exp(scores - 5.0).sum(axis=-1), rtol=0, atol=TOL)


# ---------------------------------------------------------------------------------------------
# Merging states, and Flash-Decoding (split the keys, keep each split's log-sum-exp, merge)
# ---------------------------------------------------------------------------------------------

FEW = settings(max_examples=30, deadline=None)


def _state(scores, values):
    """The state (m, l, acc) of one set of keys, computed directly from its definition."""
    m = scores.max(axis=-1)
    p = np.exp(scores - m[..., None])
    return m, p.sum(axis=-1), p @ values


def test_merge_of_two_states_is_the_state_of_the_union():
    rng = np.random.default_rng(0)
    scores, values = 5 * rng.normal(size=(3, 7)), rng.normal(size=(7, 2))
    merged = mk.merge_softmax_states(_state(scores[:, :4], values[:4]), _state(scores[:, 4:], values[4:]))
    for got, expected in zip(merged, _state(scores, values)):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


def test_merge_is_commutative_and_an_empty_state_changes_nothing():
    rng = np.random.default_rng(1)
    a = _state(rng.normal(size=(2, 3)), rng.normal(size=(3, 4)))
    b = _state(rng.normal(size=(2, 5)), rng.normal(size=(5, 4)))
    for x, y in zip(mk.merge_softmax_states(a, b), mk.merge_softmax_states(b, a)):
        np.testing.assert_allclose(x, y, rtol=1e-15, atol=0)
    empty = (np.full(2, -np.inf), np.zeros(2), np.zeros((2, 4)))
    for x, y in zip(mk.merge_softmax_states(empty, a), a):
        np.testing.assert_array_equal(x, y)
    m, denom, acc = mk.merge_softmax_states(empty, empty)  # two rows that saw no key stay empty, no NaN
    assert np.isneginf(m).all() and (denom == 0).all() and (acc == 0).all()


def test_a_partial_output_with_its_lse_is_a_state():
    # (L, 1, o) and (m, l, acc) describe the same keys when L = m + log l and o = acc / l.
    rng = np.random.default_rng(2)
    m, denom, acc = _state(3 * rng.normal(size=(4, 6)), rng.normal(size=(6, 3)))
    other = _state(rng.normal(size=(4, 2)), rng.normal(size=(2, 3)))
    direct = mk.merge_softmax_states((m, denom, acc), other)
    shifted = mk.merge_softmax_states((m + np.log(denom), np.ones(4), acc / denom[:, None]), other)
    np.testing.assert_allclose(direct[2] / direct[1][:, None], shifted[2] / shifted[1][:, None], rtol=1e-12, atol=0)


@FEW
@given(shape=shapes, data=st.data())
def test_flash_decoding_equals_naive(shape, data):
    q, k, v = _qkv(**shape)
    num_splits = data.draw(st.integers(1, shape["s"]))
    out = mk.flash_decoding(q, k, v, num_splits)
    expected, _ = mk.scaled_dot_product_attention(q, k, v)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=0, atol=TOL)


def test_partials_are_each_splits_attention_and_log_sum_exp():
    q, k, v = _qkv(4, (2,), 1, 10, 4, 3)  # a decode step: one query row per head
    outs, lses = mk.flash_decoding_partials(q, k, v, num_splits=3)
    assert outs.shape == (3, 2, 1, 3) and lses.shape == (3, 2, 1)
    for i, (start, stop) in enumerate([(0, 3), (3, 6), (6, 10)]):  # mk.split_bounds(10, 3)
        scores = q @ np.swapaxes(k[..., start:stop, :], -1, -2) / 2.0  # sqrt(d_h) = 2
        np.testing.assert_allclose(lses[i], np.log(np.exp(scores).sum(axis=-1)), rtol=1e-12, atol=0)
        np.testing.assert_allclose(outs[i], mk.scaled_dot_product_attention(q, k[..., start:stop, :],
                                                                            v[..., start:stop, :])[0], rtol=0, atol=TOL)


def test_merging_partials_in_any_order_gives_the_same_output():
    q, k, v = _qkv(6, (3,), 2, 12, 4, 2)
    outs, lses = mk.flash_decoding_partials(q, k, v, num_splits=4)
    states = [(lse, np.ones_like(lse), out) for out, lse in zip(outs, lses)]
    forward, backward = states[0], states[-1]
    for state in states[1:]:
        forward = mk.merge_softmax_states(forward, state)
    for state in states[-2::-1]:
        backward = mk.merge_softmax_states(state, backward)
    np.testing.assert_allclose(forward[2] / forward[1][..., None], backward[2] / backward[1][..., None],
                               rtol=0, atol=TOL)


def test_gqa_packing_the_query_heads_of_one_kv_head_into_rows():
    # h = 8 query heads on h_kv = 2 KV heads, one decode token: the g = 4 queries of KV head j are the
    # rows of one (g, d_h) tile, so each KV head's cache is read once for all of them.
    rng = np.random.default_rng(8)
    q, k, v = rng.normal(size=(8, 1, 4)), rng.normal(size=(2, 9, 4)), rng.normal(size=(2, 9, 3))
    packed = mk.flash_decoding(q.reshape(2, 4, 4), k, v, num_splits=3)  # (h_kv, g, d_v)
    expected, _ = mk.grouped_attention(q, k, v)  # (h, 1, d_v)
    np.testing.assert_allclose(packed.reshape(8, 1, 3), expected, rtol=0, atol=TOL)


def test_flash_decoding_large_scores_do_not_overflow():
    q, k, v = _qkv(5, (), 1, 40, 4, 2)
    out = mk.flash_decoding(q * 300, k * 300, v, num_splits=5)
    np.testing.assert_allclose(out, mk.scaled_dot_product_attention(q * 300, k * 300, v)[0], rtol=0, atol=TOL)


@pytest.mark.parametrize("s, splits, bounds", [
    (10, 4, [0, 2, 5, 7, 10]),  # sizes 2, 3, 2, 3
    (8, 1, [0, 8]),  # one split: plain attention
    (5, 5, [0, 1, 2, 3, 4, 5]),  # one key per split
])
def test_split_bounds(s, splits, bounds):
    assert mk.split_bounds(s, splits) == bounds


def test_too_many_splits_are_refused():
    q, k, v = _qkv(1, (), 1, 3, 2, 2)
    with pytest.raises(ValueError, match=r"^num_splits \(4\) must not exceed the number of keys s \(3\)"):
        mk.flash_decoding(q, k, v, num_splits=4)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_bad_num_splits(bad):
    q, k, v = _qkv(1, (), 1, 3, 2, 2)
    with pytest.raises(ValueError, match=r"^num_splits must be a positive integer"):
        mk.flash_decoding(q, k, v, num_splits=bad)


def test_flash_decoding_refuses_nan_scores():
    q, k, v = _qkv(1, (), 1, 4, 2, 2)
    q[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^flash_decoding: scores contain NaN or \+inf"):
        mk.flash_decoding(q, k, v, num_splits=2)


def test_flash_decoding_checks_shapes_like_attention():
    with pytest.raises(ValueError, match=r"^k and v must hold the same number of keys"):
        mk.flash_decoding(np.ones((1, 3)), np.ones((4, 3)), np.ones((5, 2)), num_splits=2)
