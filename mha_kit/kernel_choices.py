"""Choices a kernel writer makes, as small counts: how many pipeline stages fit and how many are
needed, what the online softmax saves over the three-pass one, what a sparse (CSR) matrix costs in
bytes and in idle lanes, how a strided view is read, and how many global atomics a histogram takes
with and without a per-block private copy.

>>> import mha_kit as mk
>>> mk.min_pipeline_stages(latency_cycles=700, compute_cycles_per_stage=512)  # 2 loads in flight + 1 in use
3

Book: chapters "Attention kernels on the GPU", "CUDA for inference engineers" and "Softmax numerics".
"""
from __future__ import annotations

import math

import numpy as np

from .config import check_positive_int


def max_pipeline_stages(capacity_bytes, tile_m, tile_n, tile_k, a_bits, b_bits, carveout_bytes=0,
                        alignment=128, barrier_bytes=16) -> int:
    """Most shared-memory stages of A and B tiles that fit: CUTLASS's ``StageCountAutoCarveout`` rule.

    Each stage holds an A tile (``tile_m x tile_k``) and a B tile (``tile_n x tile_k``), rounded up to
    ``alignment`` bytes, plus its two 8-byte mbarriers (full and empty); the epilogue's
    ``carveout_bytes`` come off the top (CUTLASS ``sm90_gmma_builder.inl``,
    ``compute_stage_count_or_override``).

    Parameters
    ----------
    capacity_bytes : int
        Shared memory one block may use (232,448 = 227 KiB on an H100).
    tile_m, tile_n, tile_k : int
        The block tile of the GEMM ``(M, K) x (K, N)``.
    a_bits, b_bits : int
        Bits per element of A and B (16 for bf16, 8 for fp8).
    carveout_bytes : int
        Shared memory reserved for the epilogue and the scheduler.
    """
    for name, value in (("capacity_bytes", capacity_bytes), ("tile_m", tile_m), ("tile_n", tile_n),
                        ("tile_k", tile_k), ("a_bits", a_bits), ("b_bits", b_bits), ("alignment", alignment)):
        check_positive_int(name, value)
    if carveout_bytes < 0:
        raise ValueError(f"carveout_bytes must be >= 0, got {carveout_bytes}")
    tiles = -(-(a_bits * tile_m * tile_k) // 8) + -(-(b_bits * tile_n * tile_k) // 8)  # bits -> bytes, rounded up
    stage = -(-tiles // alignment) * alignment + barrier_bytes
    usable = capacity_bytes // alignment * alignment - -(-carveout_bytes // alignment) * alignment
    if usable < stage:
        raise ValueError(f"one stage ({stage} B) must fit in capacity - carveout ({usable} B)")
    return usable // stage


def min_pipeline_stages(latency_cycles, compute_cycles_per_stage) -> int:
    """Fewest stages that hide a load: the loads in flight must cover the latency of one.

    While the MMA works on one stage, ``stages - 1`` loads are in flight; each stage's MMA takes
    ``compute_cycles_per_stage``, so ``(stages - 1) * compute >= latency`` keeps the MMA fed.
    """
    if latency_cycles < 0 or compute_cycles_per_stage <= 0:
        raise ValueError(f"latency_cycles must be >= 0 and compute_cycles_per_stage > 0, "
                         f"got {latency_cycles} and {compute_cycles_per_stage}")
    return 1 + max(1, math.ceil(latency_cycles / compute_cycles_per_stage))


def softmax_counts(x, online):
    """Softmax of one row, the scalar loops of Milakov and Gimelshein (2018), with their costs.

    ``online=False`` is the safe softmax (their Algorithm 2): a pass for the max, one for the sum of
    ``exp(x - m)``, one that writes ``exp(x - m) / d``. ``online=True`` is Algorithm 3: one pass keeps
    a running max and rescales the running sum by ``exp(m_old - m_new)``, then the writing pass.

    Parameters
    ----------
    x : ndarray, shape (n,)

    Returns
    -------
    y : ndarray, shape (n,)
    counts : dict
        ``loads`` and ``stores`` of vector elements, ``exps`` evaluated, ``passes`` over the input.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"x must be one non-empty row, got shape {x.shape}")
    loads = exps = 0
    m, d = -np.inf, 0.0
    if online:
        for v in x:  # pass 1: running max and rescaled sum
            m_new = max(m, v)
            d = d * np.exp(m - m_new) + np.exp(v - m_new)
            m, loads, exps = m_new, loads + 1, exps + 2
    else:
        for v in x:  # pass 1: max
            m, loads = max(m, v), loads + 1
        for v in x:  # pass 2: sum
            d, loads, exps = d + np.exp(v - m), loads + 1, exps + 1
    y = np.exp(x - m) / d  # last pass: one load, one exp and one store per element
    counts = {"loads": loads + x.size, "stores": x.size, "exps": exps + x.size, "passes": 2 if online else 3}
    return y, counts


def csr_from_dense(a):
    """Compressed sparse row form of a matrix: ``(indptr, indices, data)``, as SciPy stores it.

    ``a`` has shape (rows, cols); ``indptr`` (rows + 1,) holds each row's first entry, ``indices`` and
    ``data`` (nnz,) the column and value of each non-zero.
    """
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"a must be a matrix (rows, cols), got shape {a.shape}")
    rows, cols = np.nonzero(a)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=a.shape[0]))])
    return indptr, cols, a[rows, cols]


def csr_spmv(indptr, indices, data, x):
    """``y = A x`` for A in CSR: row r sums ``data[j] * x[indices[j]]`` over its entries (a gather of x)."""
    indptr, indices = np.asarray(indptr), np.asarray(indices)
    if indptr.ndim != 1 or indptr[0] != 0 or indptr[-1] != len(indices) or len(indices) != len(data):
        raise ValueError(f"indptr must start at 0 and end at nnz = {len(indices)} = len(data) = {len(data)}")
    products = np.asarray(data) * np.asarray(x)[indices]  # (nnz,): one gathered x per non-zero
    sums = np.concatenate([[0.0], np.cumsum(products)])
    return sums[indptr[1:]] - sums[indptr[:-1]]


def csr_scalar_lane_use(row_nnz, lanes=32) -> float:
    """Share of lane-steps doing work when one thread takes one row (CSR-scalar), ``lanes`` rows a warp.

    A warp runs as long as its longest row; a lane whose row is shorter idles. Rows are taken in
    order, ``lanes`` at a time (Bell and Garland 2009, sec. 4.3).
    """
    row_nnz = np.asarray(row_nnz)
    lanes = check_positive_int("lanes", lanes)
    if row_nnz.ndim != 1 or row_nnz.size == 0 or (row_nnz < 0).any():
        raise ValueError(f"row_nnz must be non-negative counts, one per row, got {row_nnz!r}")
    padded = np.concatenate([row_nnz, np.zeros(-row_nnz.size % lanes, dtype=row_nnz.dtype)])
    per_warp = padded.reshape(-1, lanes)  # (warps, lanes)
    busy = per_warp.max(axis=1).sum() * lanes
    return float(row_nnz.sum() / busy) if busy else 1.0


def contiguous_strides(shape):
    """Row-major strides, in elements, of a tensor of ``shape``: the last index moves fastest."""
    strides = np.cumprod([1, *shape[:0:-1]])[::-1]
    return tuple(int(s) for s in strides)


def strided_read(flat, shape, strides, offset=0):
    """What a kernel reads from ``flat`` memory when it indexes ``shape`` with ``strides`` (elements).

    Element ``i`` sits at ``offset + sum(i_k * strides[k])``: the address rule of every tensor
    library. A kernel that assumes the contiguous strides of ``shape`` reads the wrong elements of a
    strided view.
    """
    if len(shape) != len(strides):
        raise ValueError(f"shape {tuple(shape)} and strides {tuple(strides)} must have one entry per dimension")
    index = np.indices(shape).reshape(len(shape), -1)  # (ndim, elements)
    addresses = offset + np.asarray(strides) @ index
    if addresses.max() >= len(flat) or addresses.min() < 0:
        raise ValueError(f"addresses run from {addresses.min()} to {addresses.max()}, outside 0..{len(flat) - 1}")
    return np.asarray(flat)[addresses].reshape(shape)


def histogram_atomics(ids, num_bins, items_per_block):
    """Global atomic adds a segment sum or histogram issues, direct and privatised per block.

    Direct: every item adds into the global bin, one atomic per item, and items with the same bin
    queue at one address. Privatised: each block adds into a shared-memory copy of the bins and then
    adds each bin it touched into global memory once.

    Returns
    -------
    dict
        ``direct`` atomics, ``privatized`` atomics, ``hottest_bin`` (most atomics on one global address,
        direct) and ``blocks``.
    """
    ids = np.asarray(ids)
    num_bins, items_per_block = check_positive_int("num_bins", num_bins), check_positive_int("items_per_block", items_per_block)
    if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or ids.max() >= num_bins:
        raise ValueError(f"ids must be a non-empty list of bins in 0..{num_bins - 1}")
    ids = ids.astype(np.intp)  # bincount takes the platform's index type only (int32 in the browser's numpy)
    block = np.arange(ids.size) // items_per_block  # which block takes each item
    touched = np.count_nonzero(np.bincount(block * num_bins + ids, minlength=(block[-1] + 1) * num_bins))
    return {"direct": int(ids.size), "privatized": int(touched),
            "hottest_bin": int(np.bincount(ids, minlength=num_bins).max()), "blocks": int(block[-1] + 1)}
