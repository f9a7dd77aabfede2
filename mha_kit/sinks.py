"""Attention sinks: keep the first tokens plus a recent window (StreamingLLM), or learn a sink logit.

A softmax row must sum to one, so a query with nothing to retrieve still spends its weight
somewhere; models trained with full attention learn to spend it on the first tokens, which
every later token can see (Xiao et al., ICLR 2024, sec. 3.1). Evicting those tokens, as plain
window attention does, moves that weight onto tokens that were never meant to receive it.
StreamingLLM keeps the first ``n_sink`` tokens and a rolling window of the last ``window``:
:class:`SinkCache` and :func:`sink_decode_step`, with the positions either of the text or of
the cache (sec. 3.2). gpt-oss instead gives each head a learned logit that takes weight and
carries no value: :func:`sink_softmax`.

This is not the rolling cache of :class:`mha_kit.RollingKVCache`: that one is exact for a
model *trained* with a sliding window; a sink cache changes what a full-attention model sees.

Book: chapter "Attention sinks and StreamingLLM".
"""
from __future__ import annotations

import numbers

import numpy as np

from .attention import _check_mask, softmax
from .config import check_positive_int
from .positions import rotary_attention


def _check_non_negative_int(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def sink_mask(n_queries, n_sink, window, n_keys=None):
    """Causal mask of StreamingLLM: each query sees the first ``n_sink`` keys and its last ``window``.

    Same convention as :func:`mha_kit.sliding_window_mask` (the queries are the last ``n_queries``
    of ``n_keys`` positions, and a query's window includes itself); ``n_sink=0`` gives that mask::

        sink_mask(5, n_sink=1, window=2) ->  [[T, F, F, F, F],
                                              [T, T, F, F, F],
                                              [T, T, T, F, F],
                                              [T, F, T, T, F],
                                              [T, F, F, T, T]]

    Returns
    -------
    ndarray of bool, shape (n_queries, n_keys)

    Book: chapter "Attention sinks and StreamingLLM".
    """
    n = check_positive_int("n_queries", n_queries)
    n_sink, w = _check_non_negative_int("n_sink", n_sink), check_positive_int("window", window)
    s = n if n_keys is None else check_positive_int("n_keys", n_keys)
    if s < n:
        raise ValueError(f"n_keys ({s}) must be at least n_queries ({n}): the queries are the last positions")
    query = np.arange(n)[:, None] + (s - n)  # (n, 1): the position of each query
    key = np.arange(s)[None, :]  # (1, s)
    return (key <= query) & ((key < n_sink) | (key > query - w))


class SinkCache:
    """Keys and values of the first ``n_sink`` positions and of the last ``window`` positions.

    Appending a token beyond ``n_sink + window`` evicts the oldest token of the window; the sink
    tokens stay forever, so the cache never holds more than ``n_sink + window`` tokens however
    many are generated. ``positions`` records where each held token sat in the text. The key-value
    shape ``(h_kv, ·, d_h)`` is fixed by the first :meth:`append`.

    Parameters
    ----------
    n_sink : int
        Initial tokens kept (StreamingLLM keeps 4); 0 gives a plain rolling window.
    window : int
        Most recent tokens kept, the newest included.

    Book: chapter "Attention sinks and StreamingLLM".
    """

    def __init__(self, n_sink, window):
        self.n_sink = _check_non_negative_int("n_sink", n_sink)
        self.window = check_positive_int("window", window)
        self._k = self._v = None  # (h_kv, held, d_h), set by the first append
        self.positions = np.zeros(0, dtype=np.int64)  # (held,): text positions, oldest first
        self.seen = 0  # tokens appended so far; the next one has position ``seen``

    def __len__(self):
        return len(self.positions)

    @property
    def capacity(self) -> int:
        """The most tokens the cache ever holds: ``n_sink + window``."""
        return self.n_sink + self.window

    @property
    def keys(self):
        """ndarray, shape (h_kv, held, d_h): the held keys, oldest first (as appended)."""
        return self._k

    @property
    def values(self):
        """ndarray, shape (h_kv, held, d_h): the held values, oldest first."""
        return self._v

    @property
    def nbytes(self) -> int:
        """Bytes of the held keys and values (0 before the first append)."""
        return 0 if self._k is None else int(self._k.nbytes + self._v.nbytes)

    def append(self, k, v):
        """Add ``t`` tokens, ``k`` and ``v`` of shape ``(h_kv, t, d_h)``, then evict beyond the window."""
        k, v = self._check(k, v)
        t = k.shape[1]
        positions = np.concatenate([self.positions, np.arange(self.seen, self.seen + t)])  # (held + t,)
        keep = (positions < self.n_sink) | (positions >= self.seen + t - self.window)  # sinks, or recent
        if self._k is None:
            self._k = self._v = np.zeros((k.shape[0], 0, k.shape[2]), dtype=k.dtype)  # (h_kv, 0, d_h)
        self._k = np.concatenate([self._k, k], axis=1)[:, keep]  # (h_kv, held + t, d_h) -> kept tokens
        self._v = np.concatenate([self._v, v], axis=1)[:, keep]
        self.positions, self.seen = positions[keep], self.seen + t

    def _check(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        if k.ndim != 3 or v.shape != k.shape:
            raise ValueError(f"expected k and v of the same shape (h_kv, t, d_h), got {k.shape} and {v.shape}")
        if self._k is not None and (k.shape[0], k.shape[2]) != (self._k.shape[0], self._k.shape[2]):
            h_kv, d_h = self._k.shape[0], self._k.shape[2]
            raise ValueError(f"expected k and v of shape ({h_kv}, t, {d_h}) like the cached ones, got {k.shape}")
        return k, v


def sink_decode_step(q, k, v, cache, positions="cache", base=10000.0, inv_freq=None):
    """One decoding step of StreamingLLM with RoPE: append the new token, attend over the cache.

    Keys are cached *before* rotation (StreamingLLM sec. 3.2) and rotated at every step:

    * ``positions="cache"`` (StreamingLLM): by their index in the cache, ``0 .. len - 1``, so a
      cache holding text positions ``[0, 1, 2, 3, 6, 7, 8, 9]`` rotates them as ``0 .. 7`` and
      the distances never exceed the cache size;
    * ``positions="original"``: by their position in the text; the result is full attention
      over the whole text with :func:`sink_mask` (the equivalence the tests check).

    Parameters
    ----------
    q : ndarray, shape (h, 1, d_h)
        The new token's queries, not rotated.
    k, v : ndarray, shape (h_kv, 1, d_h)
        Its keys (not rotated) and values.
    cache : SinkCache
        Modified in place.
    positions : {"cache", "original"}
    base, inv_freq
        As for :func:`mha_kit.rope`.

    Returns
    -------
    out : ndarray, shape (h, 1, d_h)
    weights : ndarray, shape (h, 1, held), over the held tokens in cache order

    Book: chapter "Attention sinks and StreamingLLM".
    """
    if not isinstance(cache, SinkCache):
        raise ValueError(f"expected a SinkCache, got {type(cache).__name__}")
    if positions not in ("cache", "original"):
        raise ValueError(f"positions must be 'cache' or 'original', got {positions!r}")
    q = np.asarray(q)
    if q.ndim != 3 or q.shape[1] != 1 or np.shape(k)[1:2] != (1,):
        raise ValueError(f"expected q (h, 1, d_h) and k, v (h_kv, 1, d_h) for one new token, got "
                         f"{q.shape} and {np.shape(k)}")
    cache.append(k, v)  # every held token is at or before the new one: no mask needed
    held = cache.positions if positions == "original" else np.arange(len(cache))
    return rotary_attention(q, cache.keys, cache.values, held[-1:], held, base=base, inv_freq=inv_freq)


def sink_softmax(scores, sink_logits, mask=None):
    """Softmax with one extra logit per head that takes weight but carries no value (gpt-oss).

    ``w_ij = exp(s_ij) / (exp(b_h) + sum_j' exp(s_ij'))``: the same as appending a key of score
    ``b_h`` and value zero, then dropping its column, so each row sums to ``1 - p_sink < 1`` and a
    head can attend to nothing. A fully masked row gets all-zero weights.

    Parameters
    ----------
    scores : ndarray, shape (..., h, n, s)
    sink_logits : array_like, shape (h,)
        The learned ``b_h`` of each head.
    mask : ndarray of bool, broadcastable to (..., h, n, s), optional
        ``True`` where a key may be attended to.

    Returns
    -------
    ndarray, shape (..., h, n, s)

    Book: chapter "Attention sinks and StreamingLLM".
    """
    scores, sink = np.asarray(scores, dtype=float), np.asarray(sink_logits, dtype=float)
    if scores.ndim < 3 or sink.shape != (scores.shape[-3],):
        raise ValueError(f"expected scores (..., h, n, s) and sink_logits (h,), got {scores.shape} and {sink.shape}")
    if mask is not None:
        scores = np.where(_check_mask(mask, scores.shape), scores, -np.inf)
    sink = np.broadcast_to(sink[:, None, None], (*scores.shape[:-1], 1))  # (..., h, n, 1)
    return softmax(np.concatenate([scores, sink], axis=-1))[..., :-1]  # the sink column dropped
