"""Tests for mha_kit.latent: rotary embedding and multi-head latent attention (MLA)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

TOL = dict(rtol=1e-9, atol=1e-11)
PROPERTY = settings(max_examples=30, deadline=None)


# ---------------------------------------------------------------------------------------------
# rope
# ---------------------------------------------------------------------------------------------

def reference_rope(x, positions, base=10000.0):
    """Pair (i, i + r/2) is one complex number, multiplied by exp(1j * position * base**(-2i/r))."""
    r = x.shape[-1]
    z = x[..., : r // 2] + 1j * x[..., r // 2:]
    freq = base ** (-2.0 * np.arange(r // 2) / r)
    z = z * np.exp(1j * np.outer(positions, freq))
    return np.concatenate([z.real, z.imag], axis=-1)


@PROPERTY
@given(n=st.integers(1, 6), half=st.integers(1, 8), heads=st.integers(1, 3), offset=st.integers(0, 5000),
       seed=st.integers(0, 2**32 - 1))
def test_rope_matches_complex_rotation_and_keeps_norms(n, half, heads, offset, seed):
    x = np.random.default_rng(seed).standard_normal((heads, n, 2 * half))
    positions = offset + np.arange(n)
    rotated = mk.rope(x, positions)
    assert rotated.shape == x.shape
    np.testing.assert_allclose(rotated, reference_rope(x, positions), **TOL)
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), **TOL)


@PROPERTY
@given(half=st.integers(1, 8), m=st.integers(0, 2000), n=st.integers(0, 2000), shift=st.integers(-500, 3000),
       seed=st.integers(0, 2**32 - 1))
def test_rope_dot_products_depend_only_on_position_difference(half, m, n, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((1, 2 * half)), rng.standard_normal((1, 2 * half))
    shift = max(shift, -min(m, n))  # keep positions non-negative
    score = (mk.rope(q, [m]) @ mk.rope(k, [n]).T).item()
    shifted = (mk.rope(q, [m + shift]) @ mk.rope(k, [n + shift]).T).item()
    assert np.isclose(score, shifted, rtol=1e-8, atol=1e-8)


def test_rope_position_zero_is_identity_and_positions_matter():
    x = np.random.default_rng(0).standard_normal((3, 4))
    np.testing.assert_array_equal(mk.rope(x, [0, 0, 0]), x)
    assert not np.allclose(mk.rope(x, [1, 2, 3]), x)


def test_rope_errors():
    with pytest.raises(ValueError, match=r"^rope needs an even last dimension, got 3$"):
        mk.rope(np.ones((2, 3)), [0, 1])
    with pytest.raises(ValueError, match=r"^expected positions of shape \(2,\), got \(3,\)$"):
        mk.rope(np.ones((2, 4)), [0, 1, 2])
    with pytest.raises(ValueError, match=r"^expected positions of shape \(2,\), got \(\)$"):
        mk.rope(np.ones((2, 4)), 0)


# ---------------------------------------------------------------------------------------------
# MLA: naive == absorbed == cached, and an independent per-head reference
# ---------------------------------------------------------------------------------------------

def reference_mla(x, w, cfg, causal=True):
    """Per-head loop: head i's key is [c_KV W_UK_i, rope(x W_KR)], its value c_KV W_UV_i."""
    n, h = x.shape[0], cfg.num_heads
    nope, r, dv = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
    pos = np.arange(n)
    c_q = x if w.w_dq is None else x @ w.w_dq
    c_kv = x @ w.w_dkv
    k_rope = mk.rope(x @ w.w_kr, pos)  # one rotary key for all heads
    heads = []
    for i in range(h):
        q = np.concatenate([c_q @ w.w_uq[:, i * nope:(i + 1) * nope],
                            mk.rope(c_q @ w.w_qr[:, i * r:(i + 1) * r], pos)], axis=-1)
        k = np.concatenate([c_kv @ w.w_uk[:, i * nope:(i + 1) * nope], k_rope], axis=-1)
        v = c_kv @ w.w_uv[:, i * dv:(i + 1) * dv]
        scores = q @ k.T / np.sqrt(nope + r)
        if causal:
            scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ w.w_o


@st.composite
def latent_layers(draw):
    cfg = mk.LatentAttentionConfig(
        d_model=draw(st.integers(1, 8)), num_heads=draw(st.integers(1, 3)), kv_lora_rank=draw(st.integers(1, 5)),
        qk_rope_head_dim=2 * draw(st.integers(1, 2)), qk_nope_head_dim=draw(st.integers(1, 3)),
        v_head_dim=draw(st.integers(1, 3)), q_lora_rank=draw(st.one_of(st.none(), st.integers(1, 5))))
    n = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    x = np.random.default_rng(seed).standard_normal((n, cfg.d_model))
    return cfg, mk.init_latent_weights(cfg, seed=seed), x


@PROPERTY
@given(layer=latent_layers(), causal=st.booleans())
def test_naive_equals_absorbed_equals_reference(layer, causal):
    cfg, w, x = layer
    absorbed, absorbed_weights = mk.latent_attention(x, w, cfg, causal=causal, form="absorbed")
    naive, naive_weights = mk.latent_attention(x, w, cfg, causal=causal, form="naive")
    n = x.shape[0]
    assert absorbed.shape == naive.shape == (n, cfg.d_model)
    assert absorbed_weights.shape == naive_weights.shape == (cfg.num_heads, n, n)
    np.testing.assert_allclose(absorbed, naive, **TOL)
    np.testing.assert_allclose(absorbed_weights, naive_weights, **TOL)
    np.testing.assert_allclose(naive, reference_mla(x, w, cfg, causal), **TOL)
    np.testing.assert_allclose(absorbed_weights.sum(axis=-1), 1.0, rtol=1e-12)


@PROPERTY
@given(layer=latent_layers(), prefill=st.integers(1, 6))
def test_latent_cached_attention_step_by_step(layer, prefill):
    cfg, w, x = layer
    n = x.shape[0]
    prefill = min(prefill, n)
    full, full_weights = mk.latent_attention(x, w, cfg, causal=True)
    cache = mk.LatentCache(cfg.kv_lora_rank, cfg.qk_rope_head_dim, max_len=n)
    out, _ = mk.latent_cached_attention(x[:prefill], w, cfg, cache)
    np.testing.assert_allclose(out, full[:prefill], **TOL)
    for t in range(prefill, n):
        out, weights = mk.latent_cached_attention(x[t:t + 1], w, cfg, cache)
        assert weights.shape == (cfg.num_heads, 1, t + 1)
        np.testing.assert_allclose(out, full[t:t + 1], **TOL)
        np.testing.assert_allclose(weights[:, 0], full_weights[:, t, :t + 1], **TOL)
    # what is cached: the latent and the rotated shared key, d_c + d_rope numbers per token
    assert cache.keys.shape == (1, n, cfg.kv_lora_rank + cfg.qk_rope_head_dim)
    np.testing.assert_allclose(cache.values[0], x @ w.w_dkv, **TOL)
    np.testing.assert_allclose(cache.keys[0, :, cfg.kv_lora_rank:], mk.rope(x @ w.w_kr, np.arange(n)), **TOL)


def test_causal_mla_ignores_later_tokens():
    cfg = mk.LatentAttentionConfig(8, 2, 4, 2, 3, 3, None)
    w = mk.init_latent_weights(cfg, seed=1)
    x = np.random.default_rng(1).standard_normal((5, 8))
    changed = x.copy()
    changed[3:] *= -4.0
    for form in ("absorbed", "naive"):
        np.testing.assert_array_equal(mk.latent_attention(changed, w, cfg, form=form)[0][:3],
                                      mk.latent_attention(x, w, cfg, form=form)[0][:3])


@pytest.mark.parametrize(
    "q_lora_rank, q_in",
    [
        (6, 6),  # queries compressed to 6 first (DeepSeek-V2)
        (None, 16),  # queries straight from d = 16 (DeepSeek-V2-Lite)
    ],
)
def test_init_latent_weights_shapes(q_lora_rank, q_in):
    # d=16, h=2, d_c=4, d_rope=2, d_nope=3, d_v=5
    w = mk.init_latent_weights(mk.LatentAttentionConfig(16, 2, 4, 2, 3, 5, q_lora_rank))
    assert (w.w_dq is None) == (q_lora_rank is None)
    if q_lora_rank is not None:
        assert w.w_dq.shape == (16, 6)
    assert w.w_uq.shape == (q_in, 2 * 3) and w.w_qr.shape == (q_in, 2 * 2)
    assert w.w_dkv.shape == (16, 4) and w.w_kr.shape == (16, 2)
    assert w.w_uk.shape == (4, 2 * 3) and w.w_uv.shape == (4, 2 * 5) and w.w_o.shape == (2 * 5, 16)


# ---------------------------------------------------------------------------------------------
# LatentCache and error paths
# ---------------------------------------------------------------------------------------------

def test_latent_cache_layout_and_bytes():
    cache = mk.LatentCache(kv_lora_rank=3, qk_rope_head_dim=2, max_len=4, dtype=np.float16)
    cache.append(np.ones((2, 3)), np.full((2, 2), 5.0))
    assert len(cache) == 2
    np.testing.assert_array_equal(cache.keys, [[[1, 1, 1, 5, 5], [1, 1, 1, 5, 5]]])
    np.testing.assert_array_equal(cache.values, np.ones((1, 2, 3)))
    assert np.shares_memory(cache.values, cache.keys)  # the value is a view of the key, stored once
    assert cache.nbytes == 2 * (3 + 2) * 2 and type(cache.nbytes) is int


@pytest.mark.parametrize(
    "c_shape, r_shape, message",
    [
        ((2, 4), (2, 2), r"^expected c_kv \(2, 3\) and k_rope \(2, 2\), got \(2, 4\) and \(2, 2\)$"),  # latent too wide
        ((2, 3), (1, 2), r"^expected c_kv \(2, 3\) and k_rope \(2, 2\), got \(2, 3\) and \(1, 2\)$"),  # token counts differ
        ((2, 3), (2, 4), r"^expected c_kv .* got \(2, 3\) and \(2, 4\)$"),  # rotary key too wide
        ((5, 3), (5, 2), r"^cache full: 0 \+ 5 tokens exceeds max_len \(4\)$"),
    ],
)
def test_latent_cache_append_errors(c_shape, r_shape, message):
    cache = mk.LatentCache(3, 2, max_len=4)
    with pytest.raises(ValueError, match=message):
        cache.append(np.zeros(c_shape), np.zeros(r_shape))
    assert len(cache) == 0


@pytest.mark.parametrize("field, args", [("kv_lora_rank", (0, 2, 3)), ("qk_rope_head_dim", (3, -2, 3)),
                                         ("max_len", (3, 2, True))])
def test_latent_cache_constructor_errors(field, args):
    with pytest.raises(ValueError, match=rf"^{field} must be a positive integer, got "):
        mk.LatentCache(*args)


CFG = mk.LatentAttentionConfig(8, 2, 4, 2, 3, 3, 5)


def test_latent_attention_errors():
    w = mk.init_latent_weights(CFG)
    with pytest.raises(ValueError, match=r"^expected x of shape \(n, 8\), got \(3, 7\)$"):
        mk.latent_attention(np.ones((3, 7)), w, CFG)
    with pytest.raises(ValueError, match=r"^expected x of shape \(n, 8\), got \(2, 3, 8\)$"):
        mk.latent_attention(np.ones((2, 3, 8)), w, CFG)
    with pytest.raises(ValueError, match=r"^expected x of shape \(n, d\) \(optionally with leading batch axes\), got \(8,\)$"):
        mk.latent_attention(np.ones(8), w, CFG)
    with pytest.raises(ValueError, match=r"^form must be 'absorbed' or 'naive', got 'fast'$"):
        mk.latent_attention(np.ones((3, 8)), w, CFG, form="fast")


def test_latent_cached_attention_errors():
    w = mk.init_latent_weights(CFG)
    with pytest.raises(ValueError, match=r"^expected x_new of shape \(t, 8\), got \(1, 6\)$"):
        mk.latent_cached_attention(np.ones((1, 6)), w, CFG, mk.LatentCache(4, 2, 3))
    with pytest.raises(ValueError, match=r"^expected x_new of shape \(n, d\) \(optionally with leading batch axes\), got \(8,\)$"):
        mk.latent_cached_attention(np.ones(8), w, CFG, mk.LatentCache(4, 2, 3))
    with pytest.raises(ValueError, match=r"^cache holds latents of 5 \+ 2, config asks for 4 \+ 2$"):
        mk.latent_cached_attention(np.ones((1, 8)), w, CFG, mk.LatentCache(5, 2, 3))
    with pytest.raises(ValueError, match=r"^cache holds latents of 4 \+ 4, config asks for 4 \+ 2$"):
        mk.latent_cached_attention(np.ones((1, 8)), w, CFG, mk.LatentCache(4, 4, 3))
    with pytest.raises(ValueError, match=r"^cache full: 0 \+ 4 tokens exceeds max_len \(3\)$"):
        mk.latent_cached_attention(np.ones((4, 8)), w, CFG, mk.LatentCache(4, 2, 3))


# ---------------------------------------------------------------------------------------------
# MLA's decode step: latent_decode_attention and latent_decode_step
# ---------------------------------------------------------------------------------------------

MLA_SMALL = mk.LatentAttentionConfig(32, 4, 8, 4, 6, 5, None)  # d=32, h=4, d_c=8, d_rope=4
MLA_QLORA = mk.LatentAttentionConfig(24, 3, 6, 2, 4, 4, 10)  # with query compression


@pytest.mark.parametrize("cfg", [MLA_SMALL, MLA_QLORA])
def test_latent_decode_step_equals_last_row_of_latent_attention(cfg):
    weights = mk.init_latent_weights(cfg, seed=4)
    x = np.random.default_rng(4).standard_normal((9, cfg.d_model))
    full, _ = mk.latent_attention(x, weights, cfg, causal=True)
    cache = mk.LatentCache(cfg.kv_lora_rank, cfg.qk_rope_head_dim, max_len=9)
    mk.latent_cached_attention(x[:8], weights, cfg, cache)  # prefill 8 tokens
    out = mk.latent_decode_step(x[8:], weights, cfg, cache)
    assert out.shape == (1, cfg.d_model) and len(cache) == 9
    np.testing.assert_allclose(out, full[8:], rtol=1e-10, atol=1e-12)


def test_latent_decode_attention_is_mqa_over_the_latents():
    rng = np.random.default_rng(8)
    kv = rng.standard_normal((1, 11, 8 + 4))  # (1, s, d_c + d_rope): one shared key per token
    q = rng.standard_normal((4, 12))
    out = mk.latent_decode_attention(q, kv, 8)
    assert out.shape == (4, 8)
    expected = mk.grouped_attention(q[:, None], kv, kv[..., :8])[0][:, 0]  # values: the first d_c columns
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_latent_decode_errors():
    with pytest.raises(ValueError, match=r"^expected kv_cache of shape \(1, s, 8 \+ d_rope\), got \(2, 5, 12\)$"):
        mk.latent_decode_attention(np.ones((4, 12)), np.ones((2, 5, 12)), 8)
    with pytest.raises(ValueError, match=r"^expected kv_cache of shape \(1, s, 8 \+ d_rope\), got \(1, 5, 8\)$"):
        mk.latent_decode_attention(np.ones((4, 8)), np.ones((1, 5, 8)), 8)  # no room for the rotary key
    cache = mk.LatentCache(8, 4, max_len=4)
    weights = mk.init_latent_weights(MLA_SMALL)
    with pytest.raises(ValueError, match=r"^expected x_new of shape \(1, 32\) for one new token, got \(2, 32\)$"):
        mk.latent_decode_step(np.ones((2, 32)), weights, MLA_SMALL, cache)
