"""The decode step in NumPy, blocked and threaded: the benchmark's readable baseline.

:func:`mha_kit.decode_attention` is the reference, one product per KV head over the whole
cache; this module computes the same numbers fast enough to measure
(``benchmarks/decode_benchmark.py``, chapter "Measure it yourself"). Three things keep NumPy
close to the memory's speed:

1. the g queries that share a KV head go into one product, so each key is read once:
   (g, d_h) @ (d_h, s) rather than g separate (1, d_h) @ (d_h, s);
2. the cache is cut into blocks (a run of KV heads, a slice of tokens) that the cores share;
   blocks of the same head are merged with a running softmax, as flash-decoding does;
3. scores are exponentiated in place, in a block small enough to stay in a core's cache.

Which NumPy formulation of a block is fastest depends on the shape and on the BLAS: a small g
makes q @ k.T a skinny product that some BLAS builds run far below their large-GEMM rate.
:data:`DECODE_KERNELS` lists the formulations; :func:`choose_decode_kernel` times them once per
shape. :data:`CACHE_LAYOUTS` and :func:`store_cache` keep the same cache in either order in memory.
Each BLAS call loads its block and then multiplies it; ``fused_decode.py`` does both in one pass.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mha_kit.cache import check_decode_inputs
from mha_kit.config import check_positive_int

_SCORES_PER_BLOCK = 1 << 17  # g * block_len scores: 512 KiB of float32, fits a core's L2 cache
_KEYS_PER_BLOCK = 1 << 16  # block_len * d_h key numbers: 256 KiB of float32 ("cache" block length)
_PARALLEL_MIN = 1 << 16  # cache elements below which one thread is faster than several
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")  # first one set wins
_POOLS = {}  # num_threads -> ThreadPoolExecutor, created on first use and reused
_CHOICES = {}  # (h, h_kv, s, d_h, d_v, dtype, threads) -> fastest options, filled by kernel="auto"

CACHE_LAYOUTS = {
    "token": "token-major: each token's d_h numbers side by side, (h_kv, s, d_h) in memory, as appending writes them",
    "dim": "dim-major: each of the d_h numbers across the tokens side by side, (h_kv, d_h, s) in memory",
}

DECODE_KERNELS = {
    "blocks": "one KV head per block, scores q @ k.T: (g, d_h) @ (d_h, s_b) -> (g, s_b)",
    "keys_first": "one KV head per block, scores k @ q.T: (s_b, d_h) @ (d_h, g) -> (s_b, g), kept transposed",
    "batched": "a run of whole KV heads per thread, one stacked product: (heads, g, d_h) @ (heads, d_h, s)",
}


def decode_attention(q, k_cache, v_cache, *, num_threads=None, block_len=None, kernel="blocks"):
    """Attention of one new token's ``h`` query heads over a cache of ``s`` tokens.

    Equals :func:`mha_kit.decode_attention` up to rounding, computed block by block over the
    cores; the module's docstring says how.

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
        Cached tokens per block; default: as many as keep ``g * block_len`` scores in cache
        (for ``"batched"``: the whole context, or a slice per thread when ``h_kv`` is smaller).
    kernel : {"blocks", "keys_first", "batched", "auto"}
        Formulation of a block (:data:`DECODE_KERNELS`); every one gives the same result up to
        rounding. ``"auto"``: the fastest for this shape and thread count, timed on first use by
        :func:`choose_decode_kernel` and remembered.

    Returns
    -------
    ndarray, shape (h, d_v)
    """
    q, k, v = check_decode_inputs(q, k_cache, v_cache)
    threads = num_threads or (_default_threads() if k.size >= _PARALLEL_MIN else 1)
    if kernel == "auto":
        options = _auto_options(q, k, v, threads)
        kernel, block_len = options["kernel"], block_len or options["block_len"]
    if kernel not in DECODE_KERNELS:
        raise ValueError(f"kernel must be one of {sorted(DECODE_KERNELS) + ['auto']}, got {kernel!r}")
    (h, d_h), (h_kv, s, _) = q.shape, k.shape
    heads_per_block, block_len = _layout(kernel, s, h // h_kv, h_kv, threads, block_len)
    dtype = np.result_type(q, k, v, np.float32)  # float32 stays float32, ints become float64
    q_grouped = (q / np.sqrt(d_h)).astype(dtype, copy=False).reshape(h_kv, h // h_kv, d_h)  # scaled once
    block = _keys_first_block if kernel == "keys_first" else _block_attention
    blocks = [(j, min(j + heads_per_block, h_kv), a, min(a + block_len, s))
              for j in range(0, h_kv, heads_per_block) for a in range(0, s, block_len)]
    parts = _map_blocks(lambda j, i, a, b: block(q_grouped[j:i], k[j:i, a:b], v[j:i, a:b]), blocks, threads)
    return _merge_blocks(parts, -(-s // block_len)).reshape(h, v.shape[-1])


def _layout(kernel, s, g, h_kv, threads, block_len=None):
    """(KV heads per block, tokens per block) of ``kernel`` for this shape and thread count."""
    if kernel != "batched":
        return 1, block_len or _default_block_len(s, g, h_kv, threads)
    blocks_per_head = -(-threads // h_kv)  # MQA on 2 cores: each thread takes half the context
    return -(-h_kv // threads), block_len or -(-s // blocks_per_head)


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
    """One block of m KV heads and s_b tokens: ``q`` (m, g, d_h), already scaled; ``k`` (m, s_b, d_h); ``v`` (m, s_b, d_v).

    Returns the row maxima (m, g), the row sums of ``exp(scores - max)`` (m, g) and the
    unnormalised output (m, g, d_v): what :func:`_merge_blocks` needs to combine blocks exactly.
    """
    scores = q @ k.swapaxes(-1, -2)  # (m, g, d_h) @ (m, d_h, s_b) -> (m, g, s_b)
    row_max = scores.max(axis=-1, keepdims=True)  # (m, g, 1)
    _check_finite(row_max)
    np.exp(np.subtract(scores, row_max, out=scores), out=scores)  # in place: no temporaries
    return row_max[..., 0], scores.sum(axis=-1), scores @ v  # (m, g, s_b) @ (m, s_b, d_v) -> (m, g, d_v)


def _keys_first_block(q, k, v):
    """As :func:`_block_attention` for one KV head (m = 1), scores computed as ``k @ q.T``.

    The tall product (s_b, d_h) @ (d_h, g) and then (g, s_b) @ (s_b, d_v) through a transposed view:
    the same numbers, another pair of BLAS calls, faster for small g in some BLAS builds.
    """
    scores_t = k[0] @ q[0].T  # (s_b, d_h) @ (d_h, g) -> (s_b, g)
    row_max = scores_t.max(axis=0)  # (g,)
    _check_finite(row_max)
    np.exp(np.subtract(scores_t, row_max, out=scores_t), out=scores_t)
    return row_max[None], scores_t.sum(axis=0)[None], (scores_t.T @ v[0])[None]  # (g, s_b) @ (s_b, d_v)


def _check_finite(row_max):
    """As :func:`mha_kit.softmax`: NaN or +inf in q or k has no answer."""
    if not np.isfinite(row_max).all():
        raise ValueError("softmax input contains NaN or +inf")


def _merge_blocks(parts, slices):
    """Combine the token slices of each KV head (running-softmax rescaling) -> (h_kv, g, d_v).

    ``parts`` holds one (row_max, row_sum, out) per block, head runs in order and, within a run,
    its ``slices`` token slices in order. Slice i of a head holds ``o_i = sum_t exp(score_t - m_i) v_t``
    and ``l_i``, the same sum without ``v_t``. With ``m = max_i m_i``, the head's output is
    ``sum_i exp(m_i - m) o_i / sum_i exp(m_i - m) l_i``: the softmax over all tokens.
    """
    runs = [parts[i:i + slices] for i in range(0, len(parts), slices)]
    stacked = [[np.stack(field, axis=1) for field in zip(*run)] for run in runs]  # (m, slices, g[, d_v])
    row_max, row_sum, out = (np.concatenate(field, axis=0) for field in zip(*stacked))  # (h_kv, slices, ...)
    rescale = np.exp(row_max - row_max.max(axis=1, keepdims=True))  # (h_kv, slices, g)
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
        _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="numpy-decode")
    return _POOLS[threads]


def store_cache(cache, layout="token"):
    """The same cache of shape ``(h_kv, s, d)`` with its numbers stored in ``layout``.

    Either way the result has shape ``(h_kv, s, d)`` and the same values, so every decode
    function reads it alike; only the order in memory differs (:data:`CACHE_LAYOUTS`). ``"dim"``
    stores ``(h_kv, d, s)`` and returns a transposed view of it: in the decode products the keys'
    and values' rows are then read along the tokens, as vLLM's paged value cache keeps each block
    (head size before block size). Which layout is faster for a variant is a question for the
    machine: ``benchmarks/decode_benchmark.py`` times both.

    Parameters
    ----------
    cache : ndarray, shape (h_kv, s, d)
    layout : {"token", "dim"}

    Returns
    -------
    ndarray, shape (h_kv, s, d)
        ``"token"``: C-contiguous (``cache`` itself when it already is); ``"dim"``: a transposed view
        of a new C-contiguous (h_kv, d, s) array.
    """
    cache = np.asarray(cache)
    if layout not in CACHE_LAYOUTS:
        raise ValueError(f"layout must be one of {sorted(CACHE_LAYOUTS)}, got {layout!r}")
    if cache.ndim != 3:
        raise ValueError(f"expected a cache of shape (h_kv, s, d), got {cache.shape}")
    if layout == "token":
        return np.ascontiguousarray(cache)
    return np.ascontiguousarray(cache.swapaxes(1, 2)).swapaxes(1, 2)  # (h_kv, d, s) in memory


def decode_candidates(s, g, d_h):
    """The (kernel, block_len) pairs :func:`choose_decode_kernel` times; ``None``: the default length.

    Each kernel at its default block length, and each also at a "cache" length whose keys fill
    256 KiB of float32 per KV head, so that a block's keys stay in a core's cache between the two
    products (for ``"batched"``: a run of heads, each cut into blocks of that length).
    """
    cache_len = max(1, min(s, _KEYS_PER_BLOCK // d_h))
    return [("blocks", None), ("blocks", cache_len), ("keys_first", None), ("keys_first", cache_len),
            ("batched", None), ("batched", cache_len)]


def choose_decode_kernel(q, k_cache, v_cache, *, num_threads=None, repeats=3):
    """Time every candidate of :func:`decode_candidates` on these inputs and return the fastest.

    Parameters
    ----------
    q, k_cache, v_cache : ndarray
        As for :func:`decode_attention`.
    num_threads : int, optional
        As for :func:`decode_attention`.
    repeats : int
        Timed runs per candidate after one untimed run; the median counts.

    Returns
    -------
    dict
        ``kernel`` and ``block_len`` (pass both to :func:`decode_attention`), and ``seconds``:
        the median time of every candidate, keyed ``"kernel/block_len"``.
    """
    q, k, v = check_decode_inputs(q, k_cache, v_cache)
    repeats = check_positive_int("repeats", repeats)
    seconds = {}
    for kernel, block_len in decode_candidates(k.shape[1], q.shape[0] // k.shape[0], k.shape[2]):
        def step():
            decode_attention(q, k, v, num_threads=num_threads, block_len=block_len, kernel=kernel)
        step()
        seconds[(kernel, block_len)] = float(np.median([_seconds(step) for _ in range(repeats)]))
    kernel, block_len = min(seconds, key=seconds.get)
    return {"kernel": kernel, "block_len": block_len,
            "seconds": {f"{name}/{length or 'default'}": t for (name, length), t in seconds.items()}}


def _seconds(func):
    """Wall time of one call of ``func()``, in seconds."""
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def _auto_options(q, k, v, threads):
    """The remembered choice of :func:`choose_decode_kernel` for this shape, timed on first use."""
    key = (q.shape, k.shape, v.shape[-1], np.result_type(q, k, v).str, threads)
    if key not in _CHOICES:
        _CHOICES[key] = choose_decode_kernel(q, k, v, num_threads=threads, repeats=1)
    return _CHOICES[key]
