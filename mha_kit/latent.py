"""Multi-head latent attention (MLA), DeepSeek-V2 (arXiv:2405.04434, sec. 2.1).

Each token's keys and values are compressed into one latent ``c_KV`` of ``d_c`` numbers; the
per-head keys and values are up-projected from it (``W_UK``, ``W_UV``). Rotary position
embedding (RoPE) cannot pass through that compression, so a small extra key of ``d_h^R``
numbers, shared by all heads, carries the position. The cache holds ``d_c + d_h^R`` numbers
per token and layer, and nothing else.

Two ways to compute the same thing:

* **naive**: rebuild full per-head keys ``[c_KV W_UK, k_rope]`` and values ``c_KV W_UV``;
* **absorbed**: fold ``W_UK`` into the query (``q_nope W_UK^T`` lives in latent space) and
  ``W_UV`` into the output, so attention runs directly over the cached latents. This is
  multi-query attention with one shared key ``[c_KV, k_rope]`` and one shared value ``c_KV``.

The RMSNorm that DeepSeek applies to the latents is left out: it does not change any shape or
the equivalences shown here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import _as_tokens, causal_mask, grouped_attention, merge_heads, scaled_dot_product_attention, split_heads
from .cache import decode_attention
from .config import LatentAttentionConfig, check_positive_int
from .positions import rope


@dataclass(frozen=True)
class LatentWeights:
    """Projection matrices of one MLA layer (shapes for ``d``, ``h``, ``d_c``, ``d_c'``)."""

    w_dq: np.ndarray | None  # (d, d_c') query down-projection, None without query compression
    w_uq: np.ndarray  # (d_c' or d, h * d_nope) query up-projection
    w_qr: np.ndarray  # (d_c' or d, h * d_rope) rotary query part
    w_dkv: np.ndarray  # (d, d_c) key-value down-projection: its output is cached
    w_uk: np.ndarray  # (d_c, h * d_nope) key up-projection
    w_uv: np.ndarray  # (d_c, h * d_v) value up-projection
    w_kr: np.ndarray  # (d, d_rope) shared rotary key: its output is cached
    w_o: np.ndarray  # (h * d_v, d) output projection


def init_latent_weights(cfg: LatentAttentionConfig, seed=0, dtype=np.float64) -> LatentWeights:
    """Random MLA weights, each ``N(0, 1/fan_in)``, from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    h, d = cfg.num_heads, cfg.d_model
    q_in = d if cfg.q_lora_rank is None else cfg.q_lora_rank

    def w(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(dtype)

    return LatentWeights(
        w_dq=None if cfg.q_lora_rank is None else w(d, cfg.q_lora_rank),
        w_uq=w(q_in, h * cfg.qk_nope_head_dim),
        w_qr=w(q_in, h * cfg.qk_rope_head_dim),
        w_dkv=w(d, cfg.kv_lora_rank),
        w_uk=w(cfg.kv_lora_rank, h * cfg.qk_nope_head_dim),
        w_uv=w(cfg.kv_lora_rank, h * cfg.v_head_dim),
        w_kr=w(d, cfg.qk_rope_head_dim),
        w_o=w(h * cfg.v_head_dim, d),
    )


class LatentCache:
    """The MLA cache: per token, the latent ``c_KV`` (``d_c``) and the rotary key (``d_rope``).

    Stored as one array ``(1, max_len, d_c + d_rope)``: viewed whole it is the single shared key
    of the absorbed form, and its first ``d_c`` columns are the shared value.
    """

    def __init__(self, kv_lora_rank, qk_rope_head_dim, max_len, dtype=np.float64):
        self.kv_lora_rank = check_positive_int("kv_lora_rank", kv_lora_rank)
        self.qk_rope_head_dim = check_positive_int("qk_rope_head_dim", qk_rope_head_dim)
        self.max_len = check_positive_int("max_len", max_len)
        self._kv = np.empty((1, self.max_len, self.kv_lora_rank + self.qk_rope_head_dim), dtype=dtype)
        self.length = 0

    def __len__(self):
        return self.length

    @property
    def keys(self):
        """ndarray, shape (1, s, d_c + d_rope): ``[c_KV, k_rope]`` per cached token (a view)."""
        return self._kv[:, : self.length]

    @property
    def values(self):
        """ndarray, shape (1, s, d_c): ``c_KV`` per cached token (a view of :attr:`keys`)."""
        return self._kv[:, : self.length, : self.kv_lora_rank]

    @property
    def nbytes(self) -> int:
        """Bytes held by the filled part: the latents and rotary keys, stored once."""
        return int(self.keys.nbytes)

    def append(self, c_kv, k_rope):
        """Store ``t`` tokens: ``c_kv`` of shape ``(t, d_c)`` and ``k_rope`` of ``(t, d_rope)``."""
        t = np.shape(c_kv)[0]
        if np.shape(c_kv) != (t, self.kv_lora_rank) or np.shape(k_rope) != (t, self.qk_rope_head_dim):
            raise ValueError(f"expected c_kv ({t}, {self.kv_lora_rank}) and k_rope ({t}, {self.qk_rope_head_dim}), "
                             f"got {np.shape(c_kv)} and {np.shape(k_rope)}")
        if self.length + t > self.max_len:
            raise ValueError(f"cache full: {self.length} + {t} tokens exceeds max_len ({self.max_len})")
        self._kv[0, self.length : self.length + t] = np.concatenate([c_kv, k_rope], axis=-1)
        self.length += t


def _queries(x, w: LatentWeights, cfg, positions):
    """Per-head query parts: ``q_nope (h, n, d_nope)`` and rotated ``q_rope (h, n, d_rope)``."""
    c_q = x if w.w_dq is None else x @ w.w_dq  # (n, d_c') or (n, d)
    q_nope = split_heads(c_q @ w.w_uq, cfg.num_heads)  # (h, n, d_nope)
    q_rope = rope(split_heads(c_q @ w.w_qr, cfg.num_heads), positions)  # (h, n, d_rope)
    return q_nope, q_rope


def _latents(x, w: LatentWeights, positions):
    """What MLA caches for tokens ``x``: ``c_kv (n, d_c)`` and rotated ``k_rope (n, d_rope)``."""
    return x @ w.w_dkv, rope(x @ w.w_kr, positions)


def _absorb_query(q_nope, q_rope, cfg, w: LatentWeights):
    """Queries of the absorbed form, ``[q_nope W_UK^T, q_rope]``: shape (h, n, d_c + d_rope).

    Attention code scales scores by ``1/sqrt(d_c + d_rope)``, the width of these queries; MLA's
    scale is ``1/sqrt(d_nope + d_rope)``, so the queries are pre-multiplied to make up the difference.
    """
    h, d_c = cfg.num_heads, cfg.kv_lora_rank
    w_uk = w.w_uk.reshape(d_c, h, cfg.qk_nope_head_dim).transpose(1, 2, 0)  # (h, d_nope, d_c)
    q_latent = q_nope @ w_uk  # (h, n, d_nope) @ (h, d_nope, d_c) -> (h, n, d_c)
    q = np.concatenate([q_latent, q_rope], axis=-1)  # (h, n, d_c + d_rope)
    return q * np.sqrt((d_c + cfg.qk_rope_head_dim) / cfg.qk_head_dim)


def _up_project(o_latent, cfg, w: LatentWeights):
    """``(h, n, d_c)`` latent outputs -> ``(n, d)``: per-head ``W_UV``, then ``W_O``."""
    w_uv = w.w_uv.reshape(cfg.kv_lora_rank, cfg.num_heads, cfg.v_head_dim).transpose(1, 0, 2)  # (h, d_c, d_v)
    return merge_heads(o_latent @ w_uv) @ w.w_o  # (h, n, d_v) -> (n, h*d_v) -> (n, d)


def _absorbed(q_nope, q_rope, kv, cfg, w: LatentWeights, mask):
    """Absorbed-form attention over cached ``kv = [c_KV, k_rope]`` of shape ``(1, s, d_c + d_rope)``."""
    q = _absorb_query(q_nope, q_rope, cfg, w)  # (h, n, d_c + d_rope)
    o_latent, weights = grouped_attention(q, kv, kv[..., :cfg.kv_lora_rank], mask)  # MQA over latents: (h, n, d_c)
    return _up_project(o_latent, cfg, w), weights


def _naive(q_nope, q_rope, c_kv, k_rope, cfg, w: LatentWeights, mask):
    """Reference form: rebuild full per-head keys and values from the latents."""
    h = cfg.num_heads
    k_nope = split_heads(c_kv @ w.w_uk, h)  # (h, s, d_nope)
    k = np.concatenate([k_nope, np.broadcast_to(k_rope, (h, *k_rope.shape))], axis=-1)  # (h, s, d_nope + d_rope)
    v = split_heads(c_kv @ w.w_uv, h)  # (h, s, d_v)
    q = np.concatenate([q_nope, q_rope], axis=-1)  # (h, n, d_nope + d_rope)
    heads, weights = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(heads) @ w.w_o, weights


def latent_attention(x, weights: LatentWeights, cfg: LatentAttentionConfig, causal=True, form="absorbed"):
    """MLA forward pass over a whole sequence.

    Parameters
    ----------
    x : ndarray, shape (n, d)
    weights : LatentWeights
    cfg : LatentAttentionConfig
    causal : bool
    form : {"absorbed", "naive"}
        Same result up to rounding; see the module docstring.

    Returns
    -------
    out : ndarray, shape (n, d)
    weights : ndarray, shape (h, n, n)
    """
    x = _as_tokens(x)
    if x.ndim != 2 or x.shape[1] != cfg.d_model:
        raise ValueError(f"expected x of shape (n, {cfg.d_model}), got {x.shape}")
    positions = np.arange(x.shape[0])
    q_nope, q_rope = _queries(x, weights, cfg, positions)
    c_kv, k_rope = _latents(x, weights, positions)
    mask = causal_mask(x.shape[0]) if causal else None
    if form == "absorbed":
        kv = np.concatenate([c_kv, k_rope], axis=-1)[None]  # (1, n, d_c + d_rope)
        return _absorbed(q_nope, q_rope, kv, cfg, weights, mask)
    if form == "naive":
        return _naive(q_nope, q_rope, c_kv, k_rope, cfg, weights, mask)
    raise ValueError(f"form must be 'absorbed' or 'naive', got {form!r}")


def latent_cached_attention(x_new, weights: LatentWeights, cfg: LatentAttentionConfig, cache: LatentCache):
    """MLA for ``t`` new tokens with a :class:`LatentCache` (absorbed form).

    Appends the new tokens' latents and rotary keys, then attends over the whole cache. Equals
    the last ``t`` rows of ``latent_attention(all_tokens, ..., causal=True)``.

    Returns
    -------
    out : ndarray, shape (t, d)
    weights : ndarray, shape (h, t, s)
    """
    x_new = _as_tokens(x_new, "x_new")
    if x_new.ndim != 2 or x_new.shape[1] != cfg.d_model:
        raise ValueError(f"expected x_new of shape (t, {cfg.d_model}), got {x_new.shape}")
    if (cache.kv_lora_rank, cache.qk_rope_head_dim) != (cfg.kv_lora_rank, cfg.qk_rope_head_dim):
        raise ValueError(f"cache holds latents of {cache.kv_lora_rank} + {cache.qk_rope_head_dim}, "
                         f"config asks for {cfg.kv_lora_rank} + {cfg.qk_rope_head_dim}")
    positions = len(cache) + np.arange(x_new.shape[0])
    cache.append(*_latents(x_new, weights, positions))
    q_nope, q_rope = _queries(x_new, weights, cfg, positions)
    mask = causal_mask(x_new.shape[0], len(cache))
    return _absorbed(q_nope, q_rope, cache.keys, cfg, weights, mask)


def latent_decode_attention(q, kv_cache, kv_lora_rank):
    """MLA's decode step over the cache, absorbed form: multi-query attention over latents.

    The one shared key of each cached token is ``[c_KV, k_rope]`` and its value is ``c_KV``, a
    view of the key's first ``d_c`` columns, so the cache is read once for both. This is
    :func:`mha_kit.decode_attention` with ``h_kv = 1``.

    Parameters
    ----------
    q : ndarray, shape (h, d_c + d_rope)
        Absorbed, pre-scaled queries of the new token (see :func:`latent_decode_step`).
    kv_cache : ndarray, shape (1, s, d_c + d_rope)
        :attr:`LatentCache.keys`.
    kv_lora_rank : int
        ``d_c``.

    Returns
    -------
    ndarray, shape (h, d_c): the latent output of each head, before ``W_UV``.

    Book: chapter "Measure it yourself".
    """
    kv = np.asarray(kv_cache)
    d_c = check_positive_int("kv_lora_rank", kv_lora_rank)
    if kv.ndim != 3 or kv.shape[0] != 1 or kv.shape[2] <= d_c:
        raise ValueError(f"expected kv_cache of shape (1, s, {d_c} + d_rope), got {kv.shape}")
    return decode_attention(q, kv, kv[..., :d_c])


def latent_decode_step(x_new, weights: LatentWeights, cfg: LatentAttentionConfig, cache: LatentCache):
    """One decoded token through MLA with a :class:`LatentCache`, via :func:`latent_decode_attention`.

    Equals ``latent_cached_attention(x_new, ...)[0]`` (without the weights), and so the last row
    of ``latent_attention(all_tokens, ...)``.

    Returns
    -------
    ndarray, shape (1, d)
    """
    x_new = _as_tokens(x_new, "x_new")
    if x_new.shape != (1, cfg.d_model):
        raise ValueError(f"expected x_new of shape (1, {cfg.d_model}) for one new token, got {x_new.shape}")
    positions = np.array([len(cache)])
    cache.append(*_latents(x_new, weights, positions))
    q = _absorb_query(*_queries(x_new, weights, cfg, positions), cfg, weights)  # (h, 1, d_c + d_rope)
    o_latent = latent_decode_attention(q[:, 0], cache.keys, cfg.kv_lora_rank)  # (h, d_c)
    return _up_project(o_latent[:, None], cfg, weights)  # (h, 1, d_c) -> (1, d)
