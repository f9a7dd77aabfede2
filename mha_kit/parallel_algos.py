"""Parallel-algorithm building blocks a kernel interview asks for: scan, compaction, work and span, schedules.

Everything is counted on the host with numpy so a chapter can print the steps and the work a GPU
version would do. Work is the number of additions, span the number of dependent steps.

>>> import numpy as np, mha_kit as mk
>>> mk.blelloch_scan(np.array([3, 1, 7, 0, 4, 1, 6, 3]))[0].tolist()
[0, 3, 4, 11, 11, 15, 16, 22]
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def _power_of_two(x):
    x = np.asarray(x)
    if x.ndim != 1 or x.size == 0 or x.size & (x.size - 1):
        raise ValueError(f"the scan needs a 1-D array whose length is a power of two, got shape {x.shape}")
    return x


def hillis_steele_scan(x):
    """Inclusive prefix sum the Hillis-Steele way: at step ``d`` every element adds the one ``2**d`` back.

    Parameters
    ----------
    x : array (n,), n a power of two

    Returns
    -------
    (scan, steps, adds) : array (n,), int, int
        ``log2 n`` steps; ``n log2 n - (n - 1)`` additions (GPU Gems 3, ch. 39, sec. 39.2.1).
    """
    out = _power_of_two(x).copy()
    n, steps, adds, offset = out.size, 0, 0, 1
    while offset < n:
        out[offset:] = out[offset:] + out[:-offset]  # double-buffered: the right side reads the old values
        adds += n - offset
        steps += 1
        offset *= 2
    return out, steps, adds


def blelloch_scan(x):
    """Exclusive prefix sum the Blelloch way: an up-sweep (reduce) tree, then a down-sweep.

    Parameters
    ----------
    x : array (n,), n a power of two

    Returns
    -------
    (scan, steps, adds) : array (n,), int, int
        ``2 log2 n`` steps and ``2 (n - 1)`` additions (the down-sweep's swaps not counted): O(n) work
        (Blelloch 1990, sec. 1.2; GPU Gems 3, ch. 39, sec. 39.2.2).
    """
    a = _power_of_two(x).copy()
    n, steps, adds, d = a.size, 0, 0, 1
    while d < n:  # up-sweep: a[k + 2d - 1] += a[k + d - 1]
        right = np.arange(2 * d - 1, n, 2 * d, dtype=np.intp)
        a[right] += a[right - d]
        adds, steps, d = adds + right.size, steps + 1, d * 2
    a[-1] = 0
    while d > 1:  # down-sweep: left child takes the parent, right child the parent plus the old left
        d //= 2
        right = np.arange(2 * d - 1, n, 2 * d, dtype=np.intp)
        left = a[right - d].copy()
        a[right - d] = a[right]
        a[right] += left
        adds, steps = adds + right.size, steps + 1
    return a, steps, adds


def stream_compact(values, keep):
    """Keep the flagged elements in order: flag, exclusive scan of the flags, scatter.

    Parameters
    ----------
    values : array (n,)
    keep : bool array (n,)

    Returns
    -------
    (kept, slots) : array (k,), intp array (n,)
        The kept values and the exclusive scan (each kept element's output slot).
    """
    values, keep = np.asarray(values), np.asarray(keep)
    if keep.dtype != bool or keep.shape != values.shape:
        raise ValueError(f"keep must be a bool array of the shape of values {values.shape}, got "
                         f"{keep.dtype} {keep.shape}")
    flags = keep.astype(np.intp)
    slots = np.cumsum(flags, dtype=np.intp) - flags  # exclusive scan
    out = np.empty(int(flags.sum()), dtype=values.dtype)
    out[slots[keep]] = values[keep]  # scatter: no two kept elements share a slot
    return out, slots


def brent_time_bound(work, span, processors) -> float:
    """Brent's bound on the steps a greedy schedule takes on ``p`` processors: ``T_p <= T_1 / p + T_inf``.

    Brent 1974 (J. ACM 21(2)), as stated by Blelloch 1990 sec. 1: work ``T_1``, span ``T_inf``.
    """
    work, span = check_positive_int("work", work), check_positive_int("span", span)
    p = check_positive_int("processors", processors)
    if span > work:
        raise ValueError(f"the span ({span}) cannot exceed the work ({work}): each step does at least one operation")
    return work / p + span


def pipeline_schedule_bubble(schedule, stages, f, b, w=0.0, fb=None) -> float:
    """Pipeline bubble time of a training schedule, DeepSeek-V3 report Table 2.

    ``"1f1b"``: ``(PP - 1)(F + B)``; ``"zb1p"``: ``(PP - 1)(F + B - 2W)``; ``"dualpipe"``:
    ``(PP/2 - 1)(F&B + B - 3W)``, where F, B, W are one chunk's forward, full backward and
    weight-backward times and F&B the time of a forward and a backward chunk run overlapped
    (default ``F + B``, no overlap gained). DualPipe needs an even ``PP``.
    """
    pp = check_positive_int("stages", stages)
    fb = f + b if fb is None else fb
    if schedule == "1f1b":
        return (pp - 1) * (f + b)
    if schedule == "zb1p":
        return (pp - 1) * (f + b - 2 * w)
    if schedule == "dualpipe":
        if pp % 2:
            raise ValueError(f"DualPipe feeds micro-batches from both ends and needs an even number of stages, got {pp}")
        return (pp / 2 - 1) * (fb + b - 3 * w)
    raise ValueError(f"schedule must be '1f1b', 'zb1p' or 'dualpipe', got {schedule!r}")


def grouped_gemm_tiles(problems, tile_m, tile_n):
    """The tile space a CUTLASS grouped GEMM walks: which problem each global tile index belongs to.

    CUTLASS's problem visitor (``include/cutlass/gemm/kernel/grouped_problem_visitor.h``) numbers the
    output tiles of all problems one after another; CTA ``c`` of a persistent grid of ``g`` CTAs takes
    tiles ``c, c + g, c + 2g, ...`` and finds each tile's problem from a prefix sum of the tile counts.

    Parameters
    ----------
    problems : int array (G, 3)
        ``(M, N, K)`` of each GEMM.
    tile_m, tile_n : int

    Returns
    -------
    (problem_of_tile, tile_starts) : intp array (T,), intp array (G + 1,)
    """
    tm, tn = check_positive_int("tile_m", tile_m), check_positive_int("tile_n", tile_n)
    p = np.asarray(problems, dtype=np.intp)
    if p.ndim != 2 or p.shape[1] != 3 or (p < 0).any():
        raise ValueError(f"problems must be a (G, 3) array of non-negative (M, N, K), got shape {p.shape}")
    tiles = ((p[:, 0] + tm - 1) // tm) * ((p[:, 1] + tn - 1) // tn)  # (G,) tiles per problem
    starts = np.concatenate([np.zeros(1, dtype=np.intp), np.cumsum(tiles, dtype=np.intp)])  # (G + 1,)
    problem_of_tile = np.repeat(np.arange(p.shape[0], dtype=np.intp), tiles)  # (T,)
    return problem_of_tile, starts
