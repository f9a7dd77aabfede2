"""How attention and its neighbours run on a GPU: bytes a fused chain saves, memory sectors a warp
touches, what a FlashAttention tile costs in registers and shared memory, a NumPy emulation of the
Triton FlashAttention program, and vLLM's fused-MoE alignment and pipeline.

>>> import mha_kit as mk
>>> mk.sectors_touched([16 * lane for lane in range(32)], access_bytes=16)  # a warp's 128-bit loads
16

Book: chapter "Attention kernels on the GPU".
"""
from __future__ import annotations

import numbers

import numpy as np

from .config import check_positive_int
from .units import elements_to_bytes

LOG2_E = 1.44269504  # 1 / ln 2, the constant Triton's fused-attention tutorial folds into the scale


def fused_chain_bytes(kernels, sizes, outputs, fmt="bf16"):
    """HBM bytes of a chain of memory-bound kernels, run one by one and fused into one.

    Parameters
    ----------
    kernels : sequence of (reads, writes)
        Each kernel's tensor names, in the order they run.
    sizes : mapping from name to int
        Elements in each tensor.
    outputs : sequence of str
        Tensors needed after the chain; a fused kernel writes only these.
    fmt : str or int
        Number format of every tensor.

    Returns
    -------
    unfused, fused : int
        Unfused: every kernel reads its inputs from HBM and writes its outputs back. Fused: the
        chain reads each tensor it did not produce once and writes only ``outputs``.
    """
    made, first_reads, unfused = set(), [], 0
    for reads, writes in kernels:
        for name in (*reads, *writes):
            if name not in sizes:
                raise ValueError(f"every tensor needs a size; {name!r} has none")
        unfused += sum(elements_to_bytes(sizes[n], fmt) for n in (*reads, *writes))
        first_reads += [n for n in reads if n not in made and n not in first_reads]
        made.update(writes)
    missing = [n for n in outputs if n not in made]
    if missing:
        raise ValueError(f"outputs must be written by the chain; {missing} are not")
    fused = sum(elements_to_bytes(sizes[n], fmt) for n in (*first_reads, *outputs))
    return unfused, fused


def sectors_touched(byte_offsets, access_bytes, sector_bytes=32) -> int:
    """Distinct ``sector_bytes``-byte memory sectors one warp-wide load touches.

    Parameters
    ----------
    byte_offsets : sequence of int, shape (lanes,)
        The byte address each lane starts at.
    access_bytes : int
        Bytes each lane loads (2 for one bf16 value, 16 for a 128-bit vector load).
    sector_bytes : int
        The unit the memory system moves: 32 bytes on NVIDIA GPUs since compute capability 6.0.
    """
    access_bytes = check_positive_int("access_bytes", access_bytes)
    sector_bytes = check_positive_int("sector_bytes", sector_bytes)
    starts = np.asarray(byte_offsets, dtype=np.int64)
    if starts.ndim != 1 or starts.size == 0 or (starts < 0).any():
        raise ValueError(f"byte_offsets must be a non-empty list of non-negative addresses, got {byte_offsets!r}")
    first, last = starts // sector_bytes, (starts + access_bytes - 1) // sector_bytes
    return len(set(np.concatenate([np.arange(a, b + 1) for a, b in zip(first, last)]).tolist()))


def attention_tile_smem_bytes(block_m, block_n, head_dim, stages, fmt="bf16") -> int:
    """Shared memory of one FlashAttention thread block: a Q tile, and ``stages`` K and V tiles.

    Parameters
    ----------
    block_m, block_n : int
        Query rows and key rows per tile.
    head_dim : int
        Columns of Q, K and V (the same head size for keys and values).
    stages : int
        K/V tiles in flight: the next one loads while the current one is used.
    fmt : str or int
        Number format of Q, K and V.
    """
    block_m, block_n, head_dim, stages = (check_positive_int(name, value) for name, value in (
        ("block_m", block_m), ("block_n", block_n), ("head_dim", head_dim), ("stages", stages)))
    return elements_to_bytes(block_m * head_dim + stages * 2 * block_n * head_dim, fmt)


def accumulator_registers(rows, block_n, head_dim, threads) -> int:
    """32-bit registers per thread that hold a tile's fp32 scores S and output accumulator O.

    ``rows`` query rows are shared by ``threads`` threads; S is ``rows x block_n`` and O is
    ``rows x head_dim``, both kept in registers for the whole key loop (FlashAttention-2 sec. 3.3).
    """
    rows, block_n, head_dim, threads = (check_positive_int(name, value) for name, value in (
        ("rows", rows), ("block_n", block_n), ("head_dim", head_dim), ("threads", threads)))
    if rows * (block_n + head_dim) % threads:
        raise ValueError(f"rows * (block_n + head_dim) = {rows * (block_n + head_dim)} must split evenly "
                         f"over threads = {threads}")
    return rows * (block_n + head_dim) // threads


WARP_SIZE = 32
#: Registers are handed to warps in steps of 256 (CUDA C++ Best Practices Guide, "Calculating Occupancy").
REGISTER_ALLOCATION_UNIT = 256
#: Most 32-bit registers one thread may use (CUDA C++ Programming Guide, "Technical Specifications per
#: Compute Capability", every capability from 7.5 to 12.0).
MAX_REGISTERS_PER_THREAD = 255
#: Largest statically sized ``__shared__`` allocation of one block; above it, dynamic shared memory with an opt-in
#: (CUDA C++ Programming Guide, Shared Memory of compute capabilities 7.x to 10.0).
STATIC_SHARED_LIMIT = 48 * 1024
#: Shared memory CUDA keeps for itself per block: a block may address the SM's carve-out less this.
RESERVED_SHARED_PER_BLOCK = 1024
#: Register-file sub-partitions per SM: registers are allocated in each, so a warp's registers must fit in one
#: quarter of the file (``cudaOccMaxBlocksPerSMRegsLimit`` in the CUDA Toolkit's cuda_occupancy.h).
REGISTER_SUBPARTITIONS = 4
#: Most threads in one block (Programming Guide, "Technical Specifications per Compute Capability").
MAX_THREADS_PER_BLOCK = 1024


def block_registers(threads, registers_per_thread) -> int:
    """32-bit registers one block takes from the register file, allocated per warp in steps of 256.

    >>> block_registers(128, 37)  # 37 x 32 = 1,184 per warp, rounded up to 1,280; four warps
    5120
    """
    threads = check_positive_int("threads", threads)
    registers_per_thread = check_positive_int("registers_per_thread", registers_per_thread)
    if registers_per_thread > MAX_REGISTERS_PER_THREAD:
        raise ValueError(f"a thread may use at most {MAX_REGISTERS_PER_THREAD} registers, got {registers_per_thread}")
    per_warp = -(-registers_per_thread * WARP_SIZE // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    return -(-threads // WARP_SIZE) * per_warp


def block_shared_bytes(gpu, static_bytes, dynamic_bytes=0):
    """Shared memory one block asks for, and whether the launch must opt in to more than 48 KB.

    Parameters
    ----------
    gpu : Accelerator
        A record with ``shared_bytes_per_sm``.
    static_bytes, dynamic_bytes : int
        ``__shared__`` arrays sized at compile time, and the launch's dynamic (``extern __shared__``) bytes.

    Returns
    -------
    total : int
        Bytes the block asks for, without the 1 KB CUDA reserves per block.
    opt_in : bool
        True above 48 KB: the kernel must call ``cudaFuncSetAttribute(kernel,
        cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)`` before launching.
    """
    if gpu.shared_bytes_per_sm is None:
        raise ValueError(f"{gpu.name} has no shared memory per SM recorded")
    for name, value in (("static_bytes", static_bytes), ("dynamic_bytes", dynamic_bytes)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    static_bytes, dynamic_bytes = int(static_bytes), int(dynamic_bytes)
    if static_bytes > STATIC_SHARED_LIMIT:
        raise ValueError(f"static shared memory is capped at {STATIC_SHARED_LIMIT} B a block, got {static_bytes}: "
                         "use dynamic shared memory and cudaFuncAttributeMaxDynamicSharedMemorySize")
    total, per_block = static_bytes + dynamic_bytes, gpu.shared_bytes_per_sm - RESERVED_SHARED_PER_BLOCK
    if total > per_block:
        raise ValueError(f"one block may address at most {per_block} B of shared memory on {gpu.name} "
                         f"(the SM's {gpu.shared_bytes_per_sm} B less the 1 KB reserved), got {total}")
    return total, total > STATIC_SHARED_LIMIT


def occupancy_limits(gpu, threads, registers, shared_bytes) -> dict:
    """Blocks one SM could hold by each of its four limits, taken one at a time.

    Parameters
    ----------
    gpu : Accelerator
        A record with ``registers_per_sm``, ``shared_bytes_per_sm``, ``max_warps_per_sm`` and
        ``max_blocks_per_sm``.
    threads, registers, shared_bytes : int
        One block's threads (at most 1,024), 32-bit registers (all its threads together, :func:`block_registers`
        rounds them as the hardware does; shared evenly among the block's warps, each of which must fit in one
        of the SM's four register sub-partitions) and shared memory (add the 1 KB CUDA reserves per block).

    Returns
    -------
    dict
        ``{"registers": ..., "shared memory": ..., "warps": ..., "blocks": ...}``; the smallest binds.
    """
    limits = (gpu.registers_per_sm, gpu.shared_bytes_per_sm, gpu.max_warps_per_sm, gpu.max_blocks_per_sm)
    if None in limits:
        raise ValueError(f"{gpu.name} has no per-SM limits recorded (registers, shared memory, warps, blocks)")
    threads, registers, shared_bytes = (check_positive_int(name, value) for name, value in (
        ("threads", threads), ("registers", registers), ("shared_bytes", shared_bytes)))
    if threads > MAX_THREADS_PER_BLOCK:
        raise ValueError(f"a block may have at most {MAX_THREADS_PER_BLOCK} threads, got {threads}")
    warps = -(-threads // WARP_SIZE)
    # Registers are allocated in each of the SM's sub-partitions: whole warps per quarter of the file, then
    # whole blocks from the warps that fit (cudaOccMaxBlocksPerSMRegsLimit).
    per_warp = -(-registers // warps)
    warps_by_registers = REGISTER_SUBPARTITIONS * ((limits[0] // REGISTER_SUBPARTITIONS) // per_warp)
    return {"registers": warps_by_registers // warps, "shared memory": limits[1] // shared_bytes,
            "warps": limits[2] // warps, "blocks": limits[3]}


def blocks_per_sm(gpu, threads, registers, shared_bytes) -> int:
    """Thread blocks one SM holds at once: the tightest of its registers, shared memory, warps and block slots
    (the parameters are :func:`occupancy_limits`'s; a block that fits on none of them raises ``ValueError``)."""
    limits = occupancy_limits(gpu, threads, registers, shared_bytes)
    fit = min(limits.values())
    if fit == 0:
        raise ValueError(f"one block must fit on an SM: {registers} registers (SM has {gpu.registers_per_sm}), "
                         f"{shared_bytes} B shared (SM has {gpu.shared_bytes_per_sm}), {threads} threads "
                         f"(SM has {gpu.max_warps_per_sm * WARP_SIZE})")
    return fit


def attention_program(q, k, v, start_m, block_m, block_n, causal=False):
    """What one Triton program of the fused-attention tutorial computes: one query block of one head.

    Parameters
    ----------
    q, k, v : ndarray, shape (n, d)
        One (batch, head) slice.
    start_m : int
        The program's query-block index, ``tl.program_id(0)``.
    block_m, block_n : int
        Query rows per program and key rows per inner-loop step.
    causal : bool

    Returns
    -------
    out : ndarray, shape (block_m, d)
    lse : ndarray, shape (block_m,)
        Log-sum-exp of the scaled scores in base 2, what the tutorial stores in ``M`` for the backward pass.
    """
    n, d = q.shape
    offs_m = start_m * block_m + np.arange(block_m)
    q_blk = q[offs_m]  # (block_m, d): loaded once, stays on chip
    m_i, l_i, acc = np.full(block_m, -np.inf), np.ones(block_m), np.zeros((block_m, d))  # l_i = 1: alpha = 0 erases it
    qk_scale = LOG2_E / np.sqrt(d)
    hi = (start_m + 1) * block_m if causal else n  # causal: no key block right of the diagonal
    for start_n in range(0, hi, block_n):
        offs_n = start_n + np.arange(block_n)
        qk = q_blk @ k[offs_n].T * qk_scale  # tl.dot(q, k): (block_m, block_n)
        if causal and start_n + block_n > start_m * block_m:  # only diagonal blocks need the mask
            qk = qk + np.where(offs_m[:, None] >= offs_n[None, :], 0.0, -1.0e6)
        m_ij = np.maximum(m_i, qk.max(axis=1))
        p = np.exp2(qk - m_ij[:, None])
        alpha = np.exp2(m_i - m_ij)  # rescales what was summed under the old maximum
        l_i, acc, m_i = l_i * alpha + p.sum(axis=1), acc * alpha[:, None] + p @ v[offs_n], m_ij
    return acc / l_i[:, None], m_i + np.log2(l_i)


def triton_attention(q, k, v, block_m=64, block_n=32, causal=False):
    """Run the tutorial's grid in NumPy: one program per (query block, batch x head).

    ``q, k, v`` have shape (batch, heads, n, d), with ``n`` a multiple of both block sizes and
    ``block_m`` a multiple of ``block_n`` (the tutorial's assumptions). Returns ``(out, lse)`` with
    shapes (batch, heads, n, d) and (batch, heads, n).
    """
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    if q.ndim != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k and v must share one shape (batch, heads, n, d), got {q.shape}, {k.shape}, {v.shape}")
    z, h, n, d = q.shape
    block_m, block_n = check_positive_int("block_m", block_m), check_positive_int("block_n", block_n)
    if n % block_m or n % block_n or block_m % block_n:
        raise ValueError(f"n = {n} must be a multiple of block_m = {block_m} and block_n = {block_n}, "
                         f"and block_m a multiple of block_n")
    out, lse = np.zeros_like(q), np.zeros((z, h, n))
    for start_m in range(n // block_m):  # grid axis 0: tl.program_id(0)
        for off_hz in range(z * h):  # grid axis 1: tl.program_id(1) = batch * heads + head
            zi, hi = divmod(off_hz, h)
            rows = slice(start_m * block_m, (start_m + 1) * block_m)
            out[zi, hi, rows], lse[zi, hi, rows] = attention_program(
                q[zi, hi], k[zi, hi], v[zi, hi], start_m, block_m, block_n, causal)
    return out, lse


def moe_align_block_size(topk_ids, block_size, num_experts):
    """vLLM's ``moe_align_block_size``: sort (token, slot) pairs by expert, pad each run to a block.

    Parameters
    ----------
    topk_ids : ndarray of int, shape (tokens, top_k)
    block_size : int
        The grouped GEMM's ``BLOCK_SIZE_M``: rows of one tile, all from one expert.
    num_experts : int

    Returns
    -------
    sorted_ids : ndarray of int, shape (num_tokens_post_pad,)
        Flat pair indices grouped by expert; padding slots hold ``tokens * top_k`` (a row that does not exist).
    expert_ids : ndarray of int, shape (num_tokens_post_pad // block_size,)
        The expert each block of rows belongs to.
    num_tokens_post_pad : int
    """
    flat = np.asarray(topk_ids).reshape(-1)  # (tokens * top_k,)
    block_size, num_experts = check_positive_int("block_size", block_size), check_positive_int("num_experts", num_experts)
    if flat.size and (flat.min() < 0 or flat.max() >= num_experts):
        raise ValueError(f"expert ids must lie in [0, num_experts = {num_experts}), got {flat.min()}..{flat.max()}")
    sorted_ids, expert_ids = [], []
    for expert in range(num_experts):
        pairs = np.flatnonzero(flat == expert).tolist()
        blocks = -(-len(pairs) // block_size)
        sorted_ids += pairs + [flat.size] * (blocks * block_size - len(pairs))
        expert_ids += [expert] * blocks
    return np.array(sorted_ids, dtype=np.int64), np.array(expert_ids, dtype=np.int64), len(sorted_ids)


def fused_experts(x, w1, w2, topk_weights, topk_ids, block_size=16):
    """vLLM's ``fused_experts`` path in NumPy: align, grouped GEMM, SiLU-and-mul, grouped GEMM, sum.

    Parameters
    ----------
    x : ndarray, shape (tokens, d)
    w1 : ndarray, shape (experts, 2 * inter, d)
        Gate and up projections stacked, as vLLM stores ``w13``.
    w2 : ndarray, shape (experts, d, inter)
    topk_weights : ndarray, shape (tokens, top_k)
    topk_ids : ndarray of int, shape (tokens, top_k)
    block_size : int

    Returns
    -------
    out : ndarray, shape (tokens, d)
    """
    tokens, top_k = np.shape(topk_ids)
    sorted_ids, expert_ids, _ = moe_align_block_size(topk_ids, block_size, w1.shape[0])
    cache3 = np.zeros((tokens * top_k, x.shape[1]))  # one output row per (token, slot) pair
    for block, expert in enumerate(expert_ids):
        rows = sorted_ids[block * block_size:(block + 1) * block_size]
        rows = rows[rows < tokens * top_k]  # the kernel masks padding rows
        h = x[rows // top_k] @ w1[expert].T  # pair -> token: a gather, not a copy of x; (rows, 2 * inter)
        gate, up = np.split(h, 2, axis=1)
        act = gate / (1.0 + np.exp(-gate)) * up  # silu_and_mul
        cache3[rows] = (act @ w2[expert].T) * topk_weights.reshape(-1)[rows, None]  # routed weight in the epilogue
    return cache3.reshape(tokens, top_k, -1).sum(axis=1)  # moe_sum: each token's k expert outputs


def pipelined_time(copy_s, compute_s, stages):
    """Time of ``stages`` copy-then-compute steps, serial on one stream and overlapped on two.

    With two streams (and an event per stage) stage ``i + 1``'s copy runs while stage ``i``
    computes, so after the first copy each stage costs ``max(copy_s, compute_s)``:
    ``copy_s + (stages - 1) * max(copy_s, compute_s) + compute_s``.

    Parameters
    ----------
    copy_s, compute_s : float >= 0, seconds per stage
    stages : int >= 1

    Returns
    -------
    (serial_s, overlapped_s) : tuple of float
    """
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1 or min(copy_s, compute_s) < 0:
        raise ValueError(f"need stages >= 1 (int) and times >= 0, got stages={stages!r}, "
                         f"copy_s={copy_s}, compute_s={compute_s}")
    serial = stages * (copy_s + compute_s)
    return serial, copy_s + (stages - 1) * max(copy_s, compute_s) + compute_s
