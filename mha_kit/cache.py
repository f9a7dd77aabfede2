"""A key-value cache and the cached attention step used when decoding one token at a time.

During decoding, the keys and values of earlier tokens never change (the causal mask stops
them from seeing later tokens), so they are computed once, stored, and read back for every new
token. Only the new token's query, key and value are computed per step.
"""
from __future__ import annotations

import numpy as np

from .attention import _as_tokens, _head_dims, causal_mask, grouped_attention, merge_heads, softmax, split_heads
from .config import check_positive_int


class KVCache:
    """Keys and values of the tokens seen so far, for ``h_kv`` key-value heads.

    Storage is allocated once for ``max_len`` tokens; :meth:`append` writes in place, and
    :attr:`keys` / :attr:`values` are views of the filled part.

    Parameters
    ----------
    num_kv_heads : int
        ``h_kv``: heads actually stored (``h`` for MHA, 1 for MQA).
    head_dim : int
        ``d_h``.
    max_len : int
        Capacity in tokens.
    dtype : numpy dtype

    Book: chapter "Worked example" and the KV-cache calculator.
    """

    def __init__(self, num_kv_heads, head_dim, max_len, dtype=np.float64):
        self.num_kv_heads = check_positive_int("num_kv_heads", num_kv_heads)
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.max_len = check_positive_int("max_len", max_len)
        self._k = np.empty((self.num_kv_heads, self.max_len, self.head_dim), dtype=dtype)  # (h_kv, max_len, d_h)
        self._v = np.empty_like(self._k)
        self.length = 0

    def __len__(self):
        return self.length

    @property
    def keys(self):
        """ndarray, shape (h_kv, s, d_h): the cached keys (a view)."""
        return self._k[:, : self.length]

    @property
    def values(self):
        """ndarray, shape (h_kv, s, d_h): the cached values (a view)."""
        return self._v[:, : self.length]

    @property
    def nbytes(self) -> int:
        """Bytes held by the filled part of the cache (keys and values)."""
        return int(self.keys.nbytes + self.values.nbytes)

    def append(self, k, v):
        """Store the keys and values of ``t`` new tokens, each of shape ``(h_kv, t, d_h)``."""
        k, v = np.asarray(k), np.asarray(v)  # lists too, like every other function here
        expected = (self.num_kv_heads, self.head_dim)
        for name, a in (("k", k), ("v", v)):
            if np.ndim(a) != 3 or (a.shape[0], a.shape[2]) != expected:
                raise ValueError(f"expected {name} of shape ({expected[0]}, t, {expected[1]}), got {np.shape(a)}")
        t = k.shape[1]
        if v.shape[1] != t:
            raise ValueError(f"k and v must hold the same number of tokens, got {t} and {v.shape[1]}")
        if self.length + t > self.max_len:
            raise ValueError(f"cache full: {self.length} + {t} tokens exceeds max_len ({self.max_len})")
        self._k[:, self.length : self.length + t] = k
        self._v[:, self.length : self.length + t] = v
        self.length += t


def cached_attention(x_new, w_q, w_k, w_v, w_o, num_heads, cache, num_kv_heads=None):
    """Causal attention for ``t`` new tokens that also attend to everything already cached.

    The new tokens' keys and values are appended to ``cache`` first, then their queries attend
    over the whole cache with ``causal_mask(t, len(cache))``. With ``t == 1`` this is one decode
    step; with the whole prompt it is the prefill. Its output equals the last ``t`` rows of
    ``multi_head_attention(all_tokens, ..., causal=True)``.

    Parameters
    ----------
    x_new : ndarray, shape (t, d)
    w_q, w_k, w_v, w_o : ndarray
        As for :func:`mha_kit.multi_head_attention`.
    num_heads : int
    cache : KVCache
        Holds ``num_kv_heads`` heads; modified in place.
    num_kv_heads : int, optional
        Defaults to ``cache.num_kv_heads``.

    Returns
    -------
    out : ndarray, shape (t, d)
    weights : ndarray, shape (h, t, s) with ``s = len(cache)`` after the append
    """
    x_new = _as_tokens(x_new, "x_new")
    w_q, w_k, w_v, w_o = (np.asarray(w) for w in (w_q, w_k, w_v, w_o))
    h_kv = cache.num_kv_heads if num_kv_heads is None else num_kv_heads
    h, h_kv, d_h = _head_dims(x_new, w_q, w_k, w_v, w_o, num_heads, h_kv)
    if (h_kv, d_h) != (cache.num_kv_heads, cache.head_dim):
        raise ValueError(f"cache holds {cache.num_kv_heads} heads of {cache.head_dim}, "
                         f"but the weights give {h_kv} heads of {d_h}")
    cache.append(split_heads(x_new @ w_k, h_kv), split_heads(x_new @ w_v, h_kv))  # (h_kv, t, d_h) each
    q = split_heads(x_new @ w_q, h)  # (t, d) @ (d, h*d_h) -> (h, t, d_h)
    mask = causal_mask(x_new.shape[-2], len(cache))  # (t, s): new tokens are the last positions
    heads, weights = grouped_attention(q, cache.keys, cache.values, mask)  # (h, t, d_h), (h, t, s)
    return merge_heads(heads) @ w_o, weights


def decode_attention(q, k_cache, v_cache):
    """Attention of one new token's ``h`` query heads over a cache of ``s`` tokens.

    No mask is needed: a new token may see every cached token, itself included. The ``g``
    query heads that share a KV head go into one product, so each cached key is read once per
    step, not ``g`` times. Equals ``grouped_attention(q[:, None], k_cache, v_cache)[0][:, 0]``
    (without the weights). The blocked, threaded and fused kernels that time this step live in
    ``benchmarks/`` (chapter "Measure it yourself"); this is the reference they are tested against.

    Parameters
    ----------
    q : ndarray, shape (h, d_h)
    k_cache : ndarray, shape (h_kv, s, d_h)
    v_cache : ndarray, shape (h_kv, s, d_v)

    Returns
    -------
    ndarray, shape (h, d_v)

    Book: chapters "Worked example" and "Measure it yourself".
    """
    q, k, v = check_decode_inputs(q, k_cache, v_cache)
    (h, d_h), h_kv = q.shape, k.shape[0]
    q_grouped = q.reshape(h_kv, h // h_kv, d_h)  # (h, d_h) -> (h_kv, g, d_h): [q0, q1 | q2, q3] for g = 2
    scores = q_grouped @ k.swapaxes(-1, -2) / d_h**0.5  # (h_kv, g, d_h) @ (h_kv, d_h, s) -> (h_kv, g, s); float32 stays
    return (softmax(scores) @ v).reshape(h, v.shape[-1])  # (h_kv, g, s) @ (h_kv, s, d_v) -> (h, d_v)


def check_decode_inputs(q, k_cache, v_cache):
    """``(q, k, v)`` as arrays, or ``ValueError`` naming the rule: the shapes of one decode step.

    ``q`` (h, d_h), ``k_cache`` (h_kv, s, d_h) and ``v_cache`` (h_kv, s, d_v), with ``h`` a
    multiple of ``h_kv``; the messages are those of :func:`mha_kit.grouped_attention`.
    """
    q, k, v = (np.asarray(a) for a in (q, k_cache, v_cache))
    if q.ndim != 2:
        raise ValueError(f"expected q of shape (h, d_h) for one new token, got {q.shape}")
    if k.ndim != 3 or v.ndim != 3 or q.shape[1] != k.shape[2] or k.shape[1] != v.shape[1]:
        raise ValueError(f"expected k_cache (h_kv, s, d_h) and v_cache (h_kv, s, d_v) for q {q.shape}, "
                         f"got {k.shape} and {v.shape}")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"k and v must have the same number of heads, got {k.shape[0]} and {v.shape[0]}")
    if q.shape[0] % k.shape[0]:
        raise ValueError(f"num_heads ({q.shape[0]}) must be divisible by num_kv_heads ({k.shape[0]})")
    return q, k, v


def first_divergence(reference, candidate, rtol=1e-6, atol=1e-9):
    """The first step at which a cached decode departs from the full recompute, or ``None``.

    Row ``t`` of each array is step ``t``'s output (the attention row, or the logits). A row
    diverges when any of its entries fails ``np.isclose(candidate, reference, rtol, atol)``.
    The index narrows the suspects: the first decode step points at the position offset, a
    multiple of the block size at the slot mapping, a window or table length at that threshold.

    Parameters
    ----------
    reference : ndarray, shape (n, ...)
        The full, uncached pass.
    candidate : ndarray, shape (n, ...)
        The cached decode, one row per step.
    rtol, atol : float
        As for ``np.isclose``.

    Returns
    -------
    int or None

    Book: chapter "The KV cache from zero" (finding a cache bug that only shows on long inputs).
    """
    reference, candidate = np.asarray(reference), np.asarray(candidate)
    if reference.ndim < 1 or reference.shape != candidate.shape:
        raise ValueError(f"reference and candidate must have the same shape (n, ...), "
                         f"got {reference.shape} and {candidate.shape}")
    close = np.isclose(candidate, reference, rtol=rtol, atol=atol)  # (n, ...)
    row_ok = close.all(axis=tuple(range(1, close.ndim)))  # (n,)
    bad = np.flatnonzero(~row_ok)
    return int(bad[0]) if bad.size else None
