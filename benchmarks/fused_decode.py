"""A fused decode kernel: one pass over the cache per KV head, compiled with numba.

The NumPy path (``numpy_decode.py``) runs a decode step as BLAS calls: one loads a block of keys
and multiplies it, the next loads the values and multiplies them, and between calls nothing is
loading. This kernel reads each cached token once and, while its key and value are in the core's
first-level cache, does everything the step needs with them, block by block of ``BLOCK_TOKENS``:

1. the scores of the ``g`` query heads that share its KV head (two heads against four keys at a
   time: six numbers loaded for eight multiply-adds);
2. an online softmax: the running maximum, the running sum of ``exp(score - max)``, and the
   rescaling of what was summed so far whenever the maximum grows (Milakov and Gimelshein);
3. the weighted sum of the values (two heads and four values at a time).

The cores split the work as Flash-Decoding does: each takes (KV head, slice of the context)
pairs, ``prange`` over them, and the slices of one head are merged by their log-sum-exp. The
loads of one block and the products of the previous one are then in flight together, in the
core's out-of-order window and its hardware prefetcher, which a sequence of BLAS calls never
allows. The arithmetic is float32, the cache is read token-major.

numba is optional (``requirements-bench.txt``): without it :data:`MISSING` says why and
:func:`fused_decode_attention` raises ``RuntimeError``. Book: chapter "Measure it yourself".
"""
from __future__ import annotations

import math

import numpy as np

from mha_kit.cache import check_decode_inputs

try:
    import numba
except ImportError as error:  # an optional benchmark dependency
    numba = None
    MISSING = f"numba is not installed ({error}); pip install -r requirements-bench.txt"
    prange = range
else:
    MISSING = None
    prange = numba.prange  # a parallel loop inside a kernel compiled with parallel=True
    # numba's own thread pool rather than OpenMP's: OMP_NUM_THREADS (which the benchmark sets to 1
    # for BLAS) does not reach it, and its idle threads sleep where OpenMP's spin; on a shared
    # 2-core machine (load average about 18) OpenMP's took 5 times longer per step (24 ms against
    # 4.6 ms, MQA at 512 tokens).
    numba.config.THREADING_LAYER = "workqueue"

BLOCK_TOKENS = 16  # tokens per block: 8 KiB of float32 keys of 128, 36 KiB of MLA's 576: a core's first-level
# cache, about; of 8, 16 and 32, 16 was fastest on the development machine
SPLIT_MIN_TOKENS = 256  # no slice of the context shorter than this: merging costs more than it gains
_LOG2E, _LN2_HI, _LN2_LO = 1.4426950408889634, 0.693359375, -2.12194440e-4  # exp(y) = 2**k * exp(r)


def _jit(**options):
    """numba's ``njit`` with fastmath (reassociated sums: vector code), or the plain function without numba."""
    if numba is None:
        return lambda func: func
    return numba.njit(fastmath=True, error_model="numpy", cache=True, **options)


@_jit(inline="always")
def _dot2x4(q0, q1, k0, k1, k2, k3):
    """Scores of two query rows against four keys: eight sums over d_h, each number loaded once."""
    a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = np.float32(0)
    for x in range(q0.shape[0]):
        u, w = q0[x], q1[x]
        y0, y1, y2, y3 = k0[x], k1[x], k2[x], k3[x]
        a0 += u * y0
        a1 += u * y1
        a2 += u * y2
        a3 += u * y3
        b0 += w * y0
        b1 += w * y1
        b2 += w * y2
        b3 += w * y3
    return a0, a1, a2, a3, b0, b1, b2, b3


@_jit(inline="always")
def _dot(q0, k0):
    """One score: a sum over d_h."""
    total = np.float32(0)
    for x in range(q0.shape[0]):
        total += q0[x] * k0[x]
    return total


@_jit(inline="always")
def _axpy2x4(c0, c1, p, i, t, v0, v1, v2, v3):
    """Two output rows ``c0, c1 += p[i:i+2, t:t+4] @ [v0, v1, v2, v3]``: four values, each loaded once."""
    a0, a1, a2, a3 = p[i, t], p[i, t + 1], p[i, t + 2], p[i, t + 3]
    b0, b1, b2, b3 = p[i + 1, t], p[i + 1, t + 1], p[i + 1, t + 2], p[i + 1, t + 3]
    for x in range(c0.shape[0]):
        y0, y1, y2, y3 = v0[x], v1[x], v2[x], v3[x]
        c0[x] += a0 * y0 + a1 * y1 + a2 * y2 + a3 * y3
        c1[x] += b0 * y0 + b1 * y1 + b2 * y2 + b3 * y3


@_jit(inline="always")
def _axpy(c0, weight, v0):
    """One output row ``c0 += weight * v0``."""
    for x in range(c0.shape[0]):
        c0[x] += weight * v0[x]


@_jit(inline="always")
def _exp_shifted(row, n, row_max, int_bits, float_bits):
    """``row[:n] = exp(row[:n] - row_max)`` and their sum, in vector code.

    ``exp(y) = 2**k * exp(r)`` with ``k = round(y / ln 2)`` and ``|r| <= ln(2) / 2``: a degree-6
    polynomial gives ``exp(r)`` to float32 rounding, and ``2**k`` is built in its exponent bits
    (``float_bits`` is a float32 view of ``int_bits``). Arguments below -87 give about ``1e-38``.
    """
    for t in range(n):
        y = max(row[t] - row_max, np.float32(-87.0))
        k = np.floor(y * np.float32(_LOG2E) + np.float32(0.5))
        r = y - k * np.float32(_LN2_HI) - k * np.float32(_LN2_LO)
        p = np.float32(1 / 720) * r + np.float32(1 / 120)
        p = ((p * r + np.float32(1 / 24)) * r + np.float32(1 / 6)) * r + np.float32(0.5)
        row[t] = (p * r + np.float32(1)) * r + np.float32(1)
        int_bits[t] = (np.int32(k) + np.int32(127)) << np.int32(23)
    total = np.float32(0)
    for t in range(n):
        row[t] *= float_bits[t]
        total += row[t]
    return total


@_jit()
def _block_scores(q, k, t0, n, scores):
    """``scores[:, :n] = q @ k[t0:t0+n].T``: (g, d_h) @ (d_h, n) -> (g, n), two rows by four keys."""
    g = q.shape[0]
    for i in range(0, g - 1, 2):
        t = 0
        while t + 4 <= n:
            r = _dot2x4(q[i], q[i + 1], k[t0 + t], k[t0 + t + 1], k[t0 + t + 2], k[t0 + t + 3])
            scores[i, t], scores[i, t + 1], scores[i, t + 2], scores[i, t + 3] = r[0], r[1], r[2], r[3]
            scores[i + 1, t], scores[i + 1, t + 1], scores[i + 1, t + 2], scores[i + 1, t + 3] = r[4], r[5], r[6], r[7]
            t += 4
        for t in range(t, n):
            scores[i, t], scores[i + 1, t] = _dot(q[i], k[t0 + t]), _dot(q[i + 1], k[t0 + t])
    if g % 2:  # an odd group: the last row alone
        for t in range(n):
            scores[g - 1, t] = _dot(q[g - 1], k[t0 + t])


@_jit()
def _block_softmax(scores, n, row_max, row_sum, acc, int_bits, float_bits):
    """Online softmax over one block: scores become ``exp(score - max)``; sums and outputs are rescaled."""
    for i in range(scores.shape[0]):
        new_max = row_max[i]
        for t in range(n):
            new_max = max(new_max, scores[i, t])
        alpha = np.float32(math.exp(row_max[i] - new_max))  # how much the old terms shrink
        row_max[i] = new_max
        row_sum[i] = row_sum[i] * alpha + _exp_shifted(scores[i], n, new_max, int_bits, float_bits)
        if alpha != 1:
            for x in range(acc.shape[1]):
                acc[i, x] *= alpha


@_jit()
def _block_values(weights, v, t0, n, acc):
    """``acc += weights[:, :n] @ v[t0:t0+n, :d_v]``: (g, n) @ (n, d_v), two rows by four values."""
    g, d_v = acc.shape
    for i in range(0, g - 1, 2):
        t = 0
        while t + 4 <= n:
            _axpy2x4(acc[i], acc[i + 1], weights, i, t, v[t0 + t, :d_v], v[t0 + t + 1, :d_v],
                     v[t0 + t + 2, :d_v], v[t0 + t + 3, :d_v])
            t += 4
        for t in range(t, n):
            _axpy(acc[i], weights[i, t], v[t0 + t, :d_v])
            _axpy(acc[i + 1], weights[i + 1, t], v[t0 + t, :d_v])
    if g % 2:
        for t in range(n):
            _axpy(acc[g - 1], weights[g - 1, t], v[t0 + t, :d_v])


@_jit()
def _span(q, k, v, start, stop, row_max, row_sum, acc):
    """One KV head over tokens ``start:stop``, block by block: fills the running max, sum and output."""
    scores = np.empty((q.shape[0], BLOCK_TOKENS), dtype=np.float32)
    int_bits = np.empty(BLOCK_TOKENS, dtype=np.int32)
    float_bits = int_bits.view(np.float32)
    row_max[:], row_sum[:], acc[:] = -np.inf, 0, 0
    for t0 in range(start, stop, BLOCK_TOKENS):
        n = min(BLOCK_TOKENS, stop - t0)
        _block_scores(q, k, t0, n, scores)
        _block_softmax(scores, n, row_max, row_sum, acc, int_bits, float_bits)
        _block_values(scores, v, t0, n, acc)


@_jit(parallel=True)
def _fused_states(q, k, v, d_v, s, splits):
    """Every (KV head, slice) pair's softmax state, in parallel: max, sum (h_kv, splits, g), output (..., d_v)."""
    h_kv, g = q.shape[0], q.shape[1]
    row_max = np.empty((h_kv, splits, g), dtype=np.float32)
    row_sum = np.empty((h_kv, splits, g), dtype=np.float32)
    acc = np.empty((h_kv, splits, g, d_v), dtype=np.float32)
    for item in prange(h_kv * splits):
        j, i = item // splits, item % splits
        _span(q[j], k[j], v[j], i * s // splits, (i + 1) * s // splits, row_max[j, i], row_sum[j, i], acc[j, i])
    return row_max, row_sum, acc


def fused_decode_attention(q, k_cache, v_cache, *, length=None, num_threads=None, num_splits=None):
    """Attention of one new token's ``h`` query heads over a cache of ``s`` tokens, in one pass.

    Equals ``mha_kit.decode_attention(q, k_cache[:, :length], v_cache[:, :length])`` up to float32
    rounding. The kernel reads a float32, token-major cache: C-contiguous, allocated for more tokens
    than it holds as :class:`mha_kit.KVCache` is, hence ``length``; a cache in another layout or
    type is copied to that one first (only tests do that: the benchmark hands it the caches it
    reads). MLA's values, the first ``d_v`` columns of its keys, are read from the keys' rows.

    Parameters
    ----------
    q : ndarray, shape (h, d_h)
    k_cache : ndarray, shape (h_kv, max_len, d_h)
    v_cache : ndarray, shape (h_kv, max_len, d_v)
    length : int, optional
        The first ``length`` cached tokens are attended to (default: all ``max_len``).
    num_threads : int, optional
        Cores the kernel uses (numba's threads); default: numba's default, every core.
    num_splits : int, optional
        Slices of the context per KV head (split-K); default: :func:`default_splits`.

    Returns
    -------
    ndarray, shape (h, d_v), float32
    """
    if MISSING:
        raise RuntimeError(MISSING)
    q, k, v = check_decode_inputs(q, k_cache, v_cache)
    (h, d_h), (h_kv, max_len, d_v) = q.shape, v.shape
    s = max_len if length is None else length
    if not 0 < s <= max_len:
        raise ValueError(f"length must be between 1 and the cache's {max_len} tokens, got {s}")
    if num_threads:
        numba.set_num_threads(num_threads)
    splits = num_splits or default_splits(h_kv, s, numba.get_num_threads())
    q_grouped = (q / d_h**0.5).astype(np.float32).reshape(h_kv, h // h_kv, d_h)  # scaled once: (h_kv, g, d_h)
    keys, values = _token_rows(k), (None if _is_key_prefix(v, k) else _token_rows(v))
    row_max, row_sum, acc = _fused_states(q_grouped, keys, keys if values is None else values, d_v, s,
                                          min(splits, s))
    return merge_states(row_max, row_sum, acc).reshape(h, d_v)


@_jit(parallel=True)
def _chunk_sums(chunks):
    """One float32 sum per row of ``chunks`` (rows, n), the rows shared by numba's threads: a pure streaming read."""
    sums = np.empty(chunks.shape[0], dtype=np.float32)
    for c in prange(chunks.shape[0]):
        total = np.float32(0)
        for x in chunks[c]:
            total += x
        sums[c] = total
    return sums


def stream_read(x, *, num_threads=None, chunks=64):
    """Sum a C-contiguous float32 array in ``chunks`` slices, the way the fused kernel reads a cache.

    The benchmark's read-bandwidth roof takes the best of several streaming reads (NumPy's sums,
    BLAS's matrix-vector product, and this one), so that no decode step that only streams can beat it.

    Returns
    -------
    float
        The sum of every element (float32 partial sums), only so that the reads cannot be skipped.
    """
    if MISSING:
        raise RuntimeError(MISSING)
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if x.size % chunks:
        raise ValueError(f"the array's {x.size} numbers must split into {chunks} equal chunks")
    if num_threads:
        numba.set_num_threads(num_threads)
    return float(_chunk_sums(x.reshape(chunks, -1)).sum())  # (chunks, size / chunks)


def default_splits(h_kv, s, threads):
    """Slices per KV head: enough (KV head, slice) pairs for two per thread, none below ``SPLIT_MIN_TOKENS``."""
    wanted = -(-2 * threads // h_kv)  # MQA on 2 cores: 4 slices; GQA-8: 1
    return max(1, min(wanted, s // SPLIT_MIN_TOKENS))


def merge_states(row_max, row_sum, acc):
    """Merge the slices of each KV head by their log-sum-exp: (h_kv, splits, g[, d_v]) -> (h_kv, g, d_v).

    Slice i holds ``o_i = sum_t exp(score_t - m_i) v_t`` and ``l_i``, the same sum without ``v_t``.
    With ``m = max_i m_i`` the head's output is ``sum_i exp(m_i - m) o_i / sum_i exp(m_i - m) l_i``.
    """
    rescale = np.exp(row_max - row_max.max(axis=1, keepdims=True))  # (h_kv, splits, g)
    out = (rescale[..., None] * acc).sum(axis=1) / (rescale * row_sum).sum(axis=1)[..., None]
    if not np.isfinite(out).all():
        raise ValueError("softmax input contains NaN or +inf")
    return out


def _token_rows(cache):
    """The cache as a C-contiguous float32 array (h_kv, s, d): itself when it already is."""
    return np.ascontiguousarray(cache, dtype=np.float32)


def _is_key_prefix(v, k):
    """Whether ``v`` is ``k[..., :d_v]`` of a C-contiguous float32 ``k``: a view of the keys' first columns (MLA)."""
    return (k.flags.c_contiguous and k.dtype == v.dtype == np.float32 and v.strides == k.strides
            and v.__array_interface__["data"][0] == k.__array_interface__["data"][0])
