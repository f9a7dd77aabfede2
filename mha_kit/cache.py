"""A key-value cache and the cached attention step used when decoding one token at a time.

During decoding, the keys and values of earlier tokens never change (the causal mask stops
them from seeing later tokens), so they are computed once, stored, and read back for every new
token. Only the new token's query, key and value are computed per step.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .attention import _as_tokens, _head_dims, causal_mask, grouped_attention, merge_heads, split_heads
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


# --- The decode step, fast enough to measure (chapter "Measure it yourself") ---------------------
#
# Decoding one token reads the whole cache once and does little arithmetic per byte, so the
# step is as fast as the cache can be streamed. Three things keep NumPy close to that limit:
#   1. the g queries that share a KV head go into one product, so each key is read once:
#      (g, d_h) @ (d_h, s) rather than g separate (1, d_h) @ (d_h, s);
#   2. the cache is cut into blocks (one KV head, a slice of tokens) that the cores share;
#      blocks of the same head are merged with a running softmax, as flash-decoding does;
#   3. scores are exponentiated in place, in a block small enough to stay in a core's cache.

_SCORES_PER_BLOCK = 1 << 17  # g * block_len scores: 512 KiB of float32, fits a core's L2 cache
_PARALLEL_MIN = 1 << 16  # cache elements below which one thread is faster than several
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")  # first one set wins
_POOLS = {}  # num_threads -> ThreadPoolExecutor, created on first use and reused


def decode_attention(q, k_cache, v_cache, *, num_threads=None, block_len=None):
    """Attention of one new token's ``h`` query heads over a cache of ``s`` tokens.

    No mask is needed: a new token may see every cached token, itself included. Equals
    ``grouped_attention(q[:, None], k_cache, v_cache)[0][:, 0]`` (without the weights), computed
    block by block over the cores; see the comment above for how.

    Parameters
    ----------
    q : ndarray, shape (h, d_h)
    k_cache : ndarray, shape (h_kv, s, d_h)
    v_cache : ndarray, shape (h_kv, s, d_v)
    num_threads : int, optional
        Threads sharing the blocks. Default: one for a small cache; for a large one, every core
        if NumPy's BLAS runs one thread per call (``OPENBLAS_NUM_THREADS=1``, see
        :func:`_default_threads`), else one, leaving the cores to BLAS.
    block_len : int, optional
        Cached tokens per block; default: as many as keep ``g * block_len`` scores in cache.

    Returns
    -------
    ndarray, shape (h, d_v)

    Book: chapters "Worked example" and "Measure it yourself".
    """
    q, k, v = _check_decode(q, k_cache, v_cache)
    (h, d_h), (h_kv, s, _) = q.shape, k.shape
    g = h // h_kv
    threads = num_threads or (_default_threads() if k.size >= _PARALLEL_MIN else 1)
    block_len = block_len or _default_block_len(s, g, h_kv, threads)
    dtype = np.result_type(q, k, v, np.float32)  # float32 stays float32, ints become float64
    q_grouped = (q / np.sqrt(d_h)).astype(dtype, copy=False).reshape(h_kv, g, d_h)  # scaled once
    blocks = [(j, a, min(a + block_len, s)) for j in range(h_kv) for a in range(0, s, block_len)]
    parts = _map_blocks(lambda j, a, b: _block_attention(q_grouped[j], k[j, a:b], v[j, a:b]), blocks, threads)
    return _merge_blocks(parts, h_kv).reshape(h, v.shape[-1])


def _check_decode(q, k, v):
    """Validate the decode inputs with the messages of :func:`mha_kit.grouped_attention`."""
    q, k, v = (np.asarray(a) for a in (q, k, v))
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


def _default_threads():
    """Every core if BLAS is set to one thread per call, else 1.

    BLAS libraries start their own threads inside each product; threads of ours on top of them
    fight for the same cores (on a busy 2-core machine, ten times slower). The variables must be
    set before NumPy is imported, as ``benchmarks/decode_benchmark.py`` does.
    """
    for name in _BLAS_THREAD_VARS:
        if name in os.environ:
            return (os.cpu_count() or 1) if os.environ[name].strip() == "1" else 1
    return 1


def _default_block_len(s, g, h_kv, threads):
    """Tokens per block: scores fit in cache, and every thread gets at least one block."""
    blocks_per_head = -(-threads // h_kv)  # MQA on 2 cores: 2 slices of the context
    return max(1, min(_SCORES_PER_BLOCK // g, -(-s // blocks_per_head)))


def _block_attention(q, k, v):
    """One block: ``q`` (g, d_h), already scaled; ``k`` (b, d_h); ``v`` (b, d_v).

    Returns the row maxima (g,), the row sums of ``exp(scores - max)`` (g,) and the
    unnormalised output (g, d_v): what :func:`_merge_blocks` needs to combine blocks exactly.
    """
    scores = q @ k.T  # (g, d_h) @ (d_h, b) -> (g, b)
    row_max = scores.max(axis=1, keepdims=True)  # (g, 1)
    if not np.isfinite(row_max).all():  # as mha_kit.softmax: NaN or inf in q or k has no answer
        raise ValueError("softmax input contains NaN or +inf")
    np.exp(np.subtract(scores, row_max, out=scores), out=scores)  # in place: no temporaries
    return row_max[:, 0], scores.sum(axis=1), scores @ v  # (g, b) @ (b, d_v) -> (g, d_v)


def _merge_blocks(parts, h_kv):
    """Combine the blocks of each KV head (running-softmax rescaling) -> (h_kv, g, d_v).

    Block i of a head holds ``o_i = sum_t exp(score_t - m_i) v_t`` and ``l_i``, the same sum
    without ``v_t``. With ``m = max_i m_i``, the head's output is
    ``sum_i exp(m_i - m) o_i / sum_i exp(m_i - m) l_i``: the softmax over all tokens.
    """
    row_max, row_sum, out = (np.stack(x).reshape(h_kv, -1, *x[0].shape) for x in zip(*parts))
    rescale = np.exp(row_max - row_max.max(axis=1, keepdims=True))  # (h_kv, blocks, g)
    total = (rescale * row_sum).sum(axis=1)  # (h_kv, g)
    return (rescale[..., None] * out).sum(axis=1) / total[..., None]  # (h_kv, g, d_v)


def _map_blocks(func, blocks, threads):
    """``[func(*block) for block in blocks]``, the blocks dealt in contiguous runs to threads.

    NumPy releases the GIL inside products and ufuncs, so Python threads use every core.
    """
    threads = max(1, min(threads, len(blocks)))
    if threads == 1:
        return [func(*block) for block in blocks]
    runs = [blocks[i * len(blocks) // threads:(i + 1) * len(blocks) // threads] for i in range(threads)]
    results = _pool(threads).map(lambda run: [func(*block) for block in run], runs)  # one run per thread
    return [part for run in results for part in run]


def _pool(threads):
    """The shared pool of ``threads`` worker threads, created on first use and kept."""
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mha_kit-decode")
    return _POOLS[threads]
