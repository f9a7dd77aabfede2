"""Tests for mha_kit.positions: permutation equivariance without positions, sinusoidal encodings,
RoPE's relative property, rotary attention, and why MLA cannot absorb W_UK through RoPE.

References are written from the papers' formulas with loops (Vaswani et al. sec. 3.5; RoFormer
eq. 14-15 with its adjacent pairs), not from mha_kit.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

TOL = dict(rtol=1e-10, atol=1e-10)
PROPERTY = settings(max_examples=30, deadline=None)
seeds = st.integers(0, 2**32 - 1)


def naive_sinusoidal(n, d, base=10000.0):
    pe = np.zeros((n, d))
    for pos in range(n):
        for i in range(d // 2):
            pe[pos, 2 * i] = math.sin(pos / base ** (2 * i / d))
            pe[pos, 2 * i + 1] = math.cos(pos / base ** (2 * i / d))
    return pe


def roformer_rotate(x, pos, base=10000.0):
    """RoFormer's layout: adjacent pairs (2i, 2i+1) rotated by pos * base**(-2i/r)."""
    out = np.empty_like(x)
    for i in range(len(x) // 2):
        a = pos * base ** (-2 * i / len(x))
        out[2 * i] = x[2 * i] * math.cos(a) - x[2 * i + 1] * math.sin(a)
        out[2 * i + 1] = x[2 * i] * math.sin(a) + x[2 * i + 1] * math.cos(a)
    return out


# ---------------------------------------------------------------------------------------------
# Without positions, attention is permutation-equivariant
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(n=st.integers(2, 7), seed=seeds)
def test_permuting_the_tokens_permutes_the_outputs(n, seed):
    rng = np.random.default_rng(seed)
    cfg = mk.AttentionConfig(8, 4, 2)
    w = mk.init_weights(cfg, seed=seed % 1000)
    x, perm = rng.standard_normal((n, 8)), rng.permutation(n)
    out, weights = mk.multi_head_attention(x, *w, 4, 2)
    out_p, weights_p = mk.multi_head_attention(x[perm], *w, 4, 2)
    np.testing.assert_allclose(out_p, out[perm], **TOL)
    np.testing.assert_allclose(weights_p, weights[:, perm][:, :, perm], **TOL)


@PROPERTY
@given(n=st.integers(2, 7), seed=seeds)
def test_added_positions_break_the_equivariance(n, seed):
    rng = np.random.default_rng(seed)
    w = mk.init_weights(mk.AttentionConfig(8, 2), seed=seed % 1000)
    x, perm = rng.standard_normal((n, 8)), np.roll(np.arange(n), 1)  # a shift moves every token
    pe = mk.sinusoidal_positions(n, 8)
    out, _ = mk.multi_head_attention(x + pe, *w, 2)
    out_p, _ = mk.multi_head_attention(x[perm] + pe, *w, 2)
    assert not np.allclose(out_p, out[perm], rtol=1e-6, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Sinusoidal encodings
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, d", [(1, 2), (7, 4), (50, 16), (3, 512)])  # smallest, toy, longer, Transformer base width
def test_sinusoidal_matches_the_formula(n, d):
    pe = mk.sinusoidal_positions(n, d)
    assert pe.shape == (n, d)
    np.testing.assert_allclose(pe, naive_sinusoidal(n, d), rtol=1e-12, atol=1e-12)


@PROPERTY
@given(offset=st.integers(0, 40), d=st.sampled_from([2, 8, 16]))
def test_sinusoidal_shift_is_a_linear_map_independent_of_the_position(offset, d):
    """Vaswani et al.'s reason: PE[p + k] = M_k PE[p], one fixed block rotation per offset k."""
    pe = mk.sinusoidal_positions(60 + offset, d)
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    m = np.zeros((d, d))
    for i, w in enumerate(omega):  # [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] [sin a, cos a]
        c, s = math.cos(offset * w), math.sin(offset * w)
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, s], [-s, c]]
    np.testing.assert_allclose(pe[offset:offset + 60], pe[:60] @ m.T, rtol=1e-9, atol=1e-9)


def test_sinusoidal_errors():
    with pytest.raises(ValueError, match=r"^d_model \(5\) must be even: sinusoidal encodings come in sine-cosine pairs$"):
        mk.sinusoidal_positions(4, 5)
    with pytest.raises(ValueError, match=r"^num_positions must be a positive integer, got 0$"):
        mk.sinusoidal_positions(0, 4)
    with pytest.raises(ValueError, match=r"^base must be a positive finite number, got -2\.0$"):
        mk.sinusoidal_positions(4, 4, base=-2.0)


# ---------------------------------------------------------------------------------------------
# RoPE
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(r=st.sampled_from([2, 4, 8, 16]), pos=st.integers(-50, 5000), seed=seeds)
def test_rope_is_roformer_rotation_with_pairs_reordered(r, pos, seed):
    x = np.random.default_rng(seed).standard_normal(r)
    half_split = mk.rope(x[None], [pos])[0]
    order = np.ravel(np.column_stack([np.arange(r // 2), np.arange(r // 2) + r // 2]))  # [0, r/2, 1, r/2+1, ...]
    np.testing.assert_allclose(half_split[order], roformer_rotate(x[order], pos), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(half_split), np.linalg.norm(x), rtol=1e-12)  # a rotation


@PROPERTY
@given(r=st.sampled_from([2, 4, 8, 64]), m=st.integers(0, 3000), n=st.integers(0, 3000),
       shift=st.integers(-1000, 1000), seed=seeds)
def test_rope_score_depends_only_on_the_distance(r, m, n, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(r), rng.standard_normal(r)
    score = mk.rope_scores(q, k, [m], [n])[0, 0]
    np.testing.assert_allclose(mk.rope_scores(q, k, [m + shift], [n + shift])[0, 0], score, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(mk.rope_scores(q, k, [m - n], [0])[0, 0], score, rtol=1e-7, atol=1e-8)


def test_rope_scores_are_constant_along_diagonals():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal(16), rng.standard_normal(16)
    scores = mk.rope_scores(q, k, np.arange(20), np.arange(20))
    for offset in range(-19, 20):
        diagonal = np.diagonal(scores, offset)
        np.testing.assert_allclose(diagonal, diagonal[0], rtol=1e-9, atol=1e-12)
    assert np.ptp(scores) > 1.0  # but not constant overall: the distance matters
    np.testing.assert_allclose(scores[0, 0], q @ k, **TOL)  # position 0 is no rotation


@PROPERTY
@given(seed=seeds, shift=st.integers(1, 10_000), causal=st.booleans())
def test_rotary_attention_is_unchanged_by_a_global_shift(seed, shift, causal):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((4, 5, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 3))
    mask = mk.causal_mask(5) if causal else None
    out, _ = mk.rotary_attention(q, k, v, np.arange(5), mask=mask)
    shifted, _ = mk.rotary_attention(q, k, v, np.arange(5) + shift, mask=mask)
    np.testing.assert_allclose(shifted, out, rtol=1e-8, atol=1e-9)


def test_rotating_the_values_too_would_break_the_shift_invariance():
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))
    pos = np.arange(5)
    outs = [mk.grouped_attention(mk.rope(q, p), mk.rope(k, p), mk.rope(v, p))[0] for p in (pos, pos + 7)]
    assert np.abs(outs[1] - outs[0]).max() > 0.1


def test_rotary_attention_positions_of_a_cache():
    """Queries at the end of a cache use positions s - t .. s - 1 and equal the full pass's last rows."""
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 6, 4)), rng.standard_normal((2, 6, 4)), rng.standard_normal((2, 6, 4))
    full, _ = mk.rotary_attention(q, k, v, np.arange(6), mask=mk.causal_mask(6))
    last, _ = mk.rotary_attention(q[:, 4:], k, v, np.arange(4, 6), np.arange(6), mask=mk.causal_mask(2, 6))
    np.testing.assert_allclose(last, full[:, 4:], **TOL)


def test_rope_errors():
    with pytest.raises(ValueError, match=r"^rope needs an even last dimension, got 3$"):
        mk.rope(np.ones((2, 3)), [0, 1])
    with pytest.raises(ValueError, match=r"^expected positions of shape \(2,\), got \(3,\)$"):
        mk.rope(np.ones((2, 4)), [0, 1, 2])
    with pytest.raises(ValueError, match=r"^positions must be integers \(token indices\), got dtype float64$"):
        mk.rope(np.ones((2, 4)), [0.0, 1.5])
    for bad in (0, float("inf"), "10000", True):
        with pytest.raises(ValueError, match=r"^base must be a positive finite number, got "):
            mk.rope(np.ones((2, 4)), [0, 1], base=bad)
    with pytest.raises(ValueError, match=r"^rope expects x of shape \(\.\.\., n, r\), got \(4,\)$"):
        mk.rope(np.ones(4), [0])
    with pytest.raises(ValueError, match=r"^expected q and k of the same shape \(r,\), got \(4,\) and \(6,\)$"):
        mk.rope_scores(np.ones(4), np.ones(6), [0], [0])
    with pytest.raises(ValueError, match=r"^expected k_positions of shape \(3,\), got \(2,\)$"):
        mk.rotary_attention(np.ones((2, 2, 4)), np.ones((1, 3, 4)), np.ones((1, 3, 4)), [0, 1], [0, 1])
    with pytest.raises(ValueError, match=r"^expected q \(\.\.\., h, n, d_h\) and k \(\.\.\., h_kv, s, d_h\), got \(2, 4\) and \(1, 3, 4\)$"):
        mk.rotary_attention(np.ones((2, 4)), np.ones((1, 3, 4)), np.ones((1, 3, 4)), [0, 1])


# ---------------------------------------------------------------------------------------------
# MLA: W_UK folds into the query without RoPE, not through it
# ---------------------------------------------------------------------------------------------

def test_absorbing_w_uk_is_exact_without_rope_and_wrong_with_it():
    rng = np.random.default_rng(4)
    d_c, d_nope, s = 6, 4, 5
    c_kv, w_uk = rng.standard_normal((s, d_c)), rng.standard_normal((d_c, d_nope))
    q, pos = rng.standard_normal((1, d_nope)), np.arange(s)
    m = np.array([s - 1])  # the query is the newest token
    keys = c_kv @ w_uk  # (s, d_nope): what MLA avoids storing
    np.testing.assert_allclose(q @ keys.T, (q @ w_uk.T) @ c_kv.T, **TOL)  # absorbed: exact
    with_rope = mk.rope(q, m) @ mk.rope(keys, pos).T  # what RoPE on the keys would need
    absorbed = (mk.rope(q, m) @ w_uk.T) @ c_kv.T  # folding W_UK skips the keys' rotations
    np.testing.assert_allclose(absorbed[0, 0], with_rope[0, 0], **TOL)  # key 0 is not rotated, so it agrees
    assert np.abs(with_rope - absorbed)[0, 1:].min() > 1e-3  # every other key is wrong
    # the rotation of key n sits between q and W_UK: one different matrix per cached position
    per_key = [(mk.rope(q, m) @ mk.rope(np.eye(d_nope), [n] * d_nope).T @ w_uk.T) @ c_kv[n] for n in pos]
    np.testing.assert_allclose(np.ravel(per_key), with_rope[0], **TOL)


# ---------------------------------------------------------------------------------------------
# ALiBi (Press et al. 2022, sec. 3; non-power-of-two head counts as in the authors' code)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h, exponents", [
    (1, [8]),  # one head: 2**-8
    (3, [4, 8, 2]),  # 2 heads (2**-4, 2**-8), then the first odd step of the 4-head sequence
    (8, [1, 2, 3, 4, 5, 6, 7, 8]),  # the paper's 8 heads: 1/2 .. 1/256
    (12, [1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5]),  # 8 heads, then 4 odd steps of the 16-head sequence
    (16, [0.5 * k for k in range(1, 17)]),  # the paper's 16 heads: 2**-0.5 .. 2**-8
])
def test_alibi_slopes(h, exponents):
    np.testing.assert_allclose(mk.alibi_slopes(h), [2.0 ** -e for e in exponents], rtol=1e-15)


def test_alibi_bias_is_the_paper_row_and_needs_the_causal_mask():
    # query i gets m * [-i, ..., -2, -1, 0] on keys 0..i (paper, sec. 3)
    bias = mk.alibi_bias(2, 4)
    m = mk.alibi_slopes(2)
    for head in range(2):
        for i in range(4):
            np.testing.assert_allclose(bias[head, i, : i + 1], m[head] * -np.arange(i, -1, -1), rtol=1e-15)
    assert (bias[:, np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] > 0).all()  # future keys: masked by the caller
    np.testing.assert_array_equal(mk.alibi_bias(2, 2, 4), bias[:, 2:])  # queries are the last positions


@PROPERTY
@given(n=st.integers(1, 9), h=st.integers(1, 12), seed=seeds)
def test_alibi_distance_bias_equals_a_bias_on_the_key_position_under_a_causal_mask(n, h, seed):
    # softmax ignores a constant per row, so m * (j - i) and BLOOM's m * j give the same weights
    scores = np.random.default_rng(seed).standard_normal((h, n, n))
    mask = mk.causal_mask(n)
    by_key = mk.alibi_slopes(h)[:, None, None] * np.arange(n)[None, None, :]
    np.testing.assert_allclose(mk.masked_softmax(scores + mk.alibi_bias(h, n), mask),
                               mk.masked_softmax(scores + by_key, mask), rtol=1e-10, atol=1e-12)


def test_alibi_errors():
    with pytest.raises(ValueError, match=r"^num_heads must be a positive integer, got 0$"):
        mk.alibi_slopes(0)
    with pytest.raises(ValueError, match=r"^s \(2\) must be at least n \(3\): the queries are the last positions$"):
        mk.alibi_bias(4, 3, 2)
