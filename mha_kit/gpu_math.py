"""Chip arithmetic behind kernel interviews: peak rates from per-SM counts, GEMM tile reuse, a warp's softmax.

>>> import mha_kit as mk
>>> round(mk.peak_flops(132, 4096, 1.83e9) / 1e12, 1)  # H100 SXM, dense bf16 on the tensor cores
989.4
>>> mk.gemm_tile_intensity(128, 128, 2)  # a 128 x 128 output tile of bf16 GEMM: FLOPs per byte loaded
64.0
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int, check_positive_number


def peak_flops(num_sms: int, flops_per_clock_per_sm: int, clock_hz: float) -> float:
    """A datasheet peak: streaming multiprocessors x FLOPs each retires per clock x clock.

    An FMA counts as two FLOPs, so an SM of 128 FP32 lanes does 256 FLOPs per clock.

    Book: chapter "Attention kernels on the GPU".
    """
    sms, per_clock = check_positive_int("num_sms", num_sms), check_positive_int("flops_per_clock_per_sm",
                                                                                 flops_per_clock_per_sm)
    return sms * per_clock * check_positive_number("clock_hz", clock_hz)


def implied_clock_hz(peak: float, num_sms: int, flops_per_clock_per_sm: int) -> float:
    """The clock a datasheet peak assumes: ``peak / (num_sms * flops_per_clock_per_sm)``, in Hz."""
    return check_positive_number("peak", peak) / peak_flops(num_sms, flops_per_clock_per_sm, 1.0)


def gemm_tile_intensity(block_m: int, block_n: int, bytes_per_element: float) -> float:
    """FLOPs per byte loaded from global memory by one output tile of a tiled GEMM.

    Each step of the K loop loads an A tile ``(block_m, block_k)`` and a B tile ``(block_k, block_n)``
    and does ``2 * block_m * block_n * block_k`` FLOPs with them; ``block_k`` cancels::

        2 * BM * BN * BK / ((BM + BN) * BK * bytes) = 2 * BM * BN / ((BM + BN) * bytes)

    A naive kernel (one output per thread, every operand from global memory) is ``block_m = block_n = 1``.
    """
    bm, bn = check_positive_int("block_m", block_m), check_positive_int("block_n", block_n)
    return 2 * bm * bn / ((bm + bn) * check_positive_number("bytes_per_element", bytes_per_element))


def tiled_gemm_bytes(m: int, n: int, k: int, block_m: int, block_n: int, bytes_per_element: float) -> float:
    """Global-memory bytes a tiled ``(m, k) @ (k, n)`` GEMM reads and writes, with no cache help.

    Each of the ``(m / block_m) * (n / block_n)`` tiles reads ``(block_m + block_n) * k`` inputs;
    the output ``(m, n)`` is written once. ``m`` and ``n`` must be multiples of the tile.
    """
    m, n, k = (check_positive_int(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    bm, bn = check_positive_int("block_m", block_m), check_positive_int("block_n", block_n)
    if m % bm or n % bn:
        raise ValueError(f"m and n must be multiples of block_m and block_n, got m={m}, n={n}, "
                         f"block_m={bm}, block_n={bn}")
    tiles = (m // bm) * (n // bn)
    return (tiles * (bm + bn) * k + m * n) * check_positive_number("bytes_per_element", bytes_per_element)


def warp_softmax(x: np.ndarray, lanes: int = 32) -> np.ndarray:
    """Softmax over the last axis as a warp-per-row CUDA kernel computes it, in float32.

    Lane ``j`` reads columns ``j, j + lanes, ...`` and keeps a running max and sum in fp32; the lanes
    then combine by a butterfly (``__shfl_xor_sync`` with offsets ``lanes/2, ..., 1``), so the sum is
    added in a different order from a sequential loop. Two passes: max, then sum of ``exp(x - max)``; the
    exponential is correctly rounded to float32 (a GPU's ``expf`` is within a few ulp of it, ``__expf`` less close).

    x : (rows, cols) float array; returns (rows, cols) float32.
    """
    lanes = check_positive_int("lanes", lanes)
    if lanes & (lanes - 1):
        raise ValueError(f"lanes must be a power of two for a butterfly reduction, got {lanes}")
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (rows, cols), got shape {x.shape}")
    rows, cols = x.shape
    padded = np.full((rows, -(-cols // lanes) * lanes), -np.inf, dtype=np.float32)
    padded[:, :cols] = x
    strided = padded.reshape(rows, -1, lanes)  # (rows, steps, lanes): step i, lane j holds column i * lanes + j

    def butterfly(per_lane, op):  # per_lane: (rows, lanes)
        offset = lanes // 2
        while offset:
            per_lane = op(per_lane, per_lane[:, np.arange(lanes) ^ offset])
            offset //= 2
        return per_lane[:, :1]  # every lane holds the result; (rows, 1)

    row_max = butterfly(strided.max(axis=1), np.maximum)
    # exp in float64 rounded to float32: a correctly rounded expf, the same on every machine
    e = np.exp(strided.astype(np.float64) - row_max[:, :, None]).astype(np.float32)  # padding: exp(-inf) = 0
    lane_sum = np.zeros((rows, lanes), dtype=np.float32)
    for step in range(e.shape[1]):  # each lane adds its own columns in order, in fp32
        lane_sum = lane_sum + e[:, step, :]
    total = butterfly(lane_sum, np.add)
    return (e.reshape(rows, -1)[:, :cols] / total).astype(np.float32)
