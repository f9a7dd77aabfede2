"""Counting models of CUDA's execution rules: thread indices, shared-memory banks, divergent warps, the
steps of a block reduction, the last-block pattern and which code of a fat binary a GPU runs.

Nothing here runs on a GPU; each function restates one rule of the CUDA C++ Programming Guide or the
NVCC documentation as arithmetic, so that a chapter can count what a kernel does.

>>> import mha_kit as mk
>>> mk.bank_conflict_degree([32 * row for row in range(32)])  # a column of a float tile[32][32]
32

Book: chapter "CUDA for inference engineers".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import check_positive_int

WARP = 32  # threads per warp on every NVIDIA GPU so far
BANKS = 32  # shared-memory banks, each 4 bytes wide, since compute capability 5.0
MAX_BLOCK_THREADS = 1024  # threads per block, every compute capability since 2.0

#: Layouts of a shared-memory tree reduction (Harris, "Optimizing Parallel Reduction in CUDA").
TREE_SCHEMES = ("interleaved", "strided", "sequential", "last-warp", "shuffle")


def thread_global_index(thread_idx, block_idx, block_dim, grid_dim) -> tuple[int, int, int]:
    """A thread's linear index in its block, its block's linear index, and its global index.

    CUDA numbers threads with x fastest: in a block of ``(Dx, Dy, Dz)`` the thread ``(x, y, z)``
    is ``x + y*Dx + z*Dx*Dy``; blocks in the grid the same way; the global index is
    ``block * (Dx*Dy*Dz) + thread``.

    Parameters
    ----------
    thread_idx, block_idx : tuple of 3 int
        ``threadIdx`` and ``blockIdx`` as (x, y, z).
    block_dim, grid_dim : tuple of 3 int
        ``blockDim`` and ``gridDim`` as (x, y, z); a block holds at most 1,024 threads.

    Returns
    -------
    thread, block, global : int
    """
    dims = [tuple(check_positive_int(f"{name}[{i}]", v) for i, v in enumerate(d))
            for name, d in (("block_dim", block_dim), ("grid_dim", grid_dim))]
    if any(len(d) != 3 for d in dims) or len(thread_idx) != 3 or len(block_idx) != 3:
        raise ValueError("indices and dimensions must each have three entries, (x, y, z)")
    (dx, dy, dz), (gx, gy, gz) = dims
    if dx * dy * dz > MAX_BLOCK_THREADS:
        raise ValueError(f"a block holds at most {MAX_BLOCK_THREADS} threads, got {dx}x{dy}x{dz} = {dx * dy * dz}")
    for name, idx, dim in (("thread_idx", thread_idx, dims[0]), ("block_idx", block_idx, dims[1])):
        if any(not 0 <= i < d for i, d in zip(idx, dim)):
            raise ValueError(f"{name} {tuple(idx)} must lie inside {dim}")
    thread = thread_idx[0] + thread_idx[1] * dx + thread_idx[2] * dx * dy
    block = block_idx[0] + block_idx[1] * gx + block_idx[2] * gx * gy
    return int(thread), int(block), int(block * dx * dy * dz + thread)


def bank_conflict_degree(word_index, banks=BANKS) -> int:
    """How many times a warp's shared-memory access is replayed: the most distinct words in one bank.

    Shared memory is split into ``banks`` banks of 4-byte words, word ``w`` in bank ``w % banks``.
    Lanes that read the *same* word are served by one broadcast; lanes that read *different* words
    of one bank are served one after another. 1 means conflict-free, 32 fully serialised.

    Parameters
    ----------
    word_index : sequence of int, shape (lanes,)
        The 32-bit word each active lane reads (byte address // 4).
    banks : int
        Banks of the shared memory: 32 since compute capability 5.0.
    """
    banks = check_positive_int("banks", banks)
    words = np.unique(np.asarray(word_index, dtype=np.int64))
    if words.ndim != 1 or words.size == 0 or (words < 0).any():
        raise ValueError(f"word_index must be a non-empty list of non-negative word indices, got {word_index!r}")
    return int(np.bincount((words % banks).astype(np.intp), minlength=banks).max())  # intp: bincount's index type on 32-bit numpy (the browser edition)


def divergent_warps(taken, warp_size=WARP) -> tuple[int, int]:
    """Warps whose lanes disagree on a branch, and all warps: ``(divergent, warps)``.

    A warp whose lanes all take, or all skip, a branch runs one path; a warp that is split runs
    both paths one after the other, the lanes of the other path masked off.

    Parameters
    ----------
    taken : sequence of bool, shape (threads,)
        Each thread's branch condition, in linear thread order; ``threads`` a multiple of ``warp_size``.
    """
    warp_size = check_positive_int("warp_size", warp_size)
    taken = np.asarray(taken, dtype=bool)
    if taken.ndim != 1 or taken.size == 0 or taken.size % warp_size:
        raise ValueError(f"taken must list a whole number of warps of {warp_size} threads, got {taken.size}")
    per_warp = taken.reshape(-1, warp_size).sum(axis=1)  # (warps,) lanes taking the branch
    return int(((per_warp > 0) & (per_warp < warp_size)).sum()), int(per_warp.size)


def tree_reduction_steps(block, scheme):
    """The steps of a shared-memory tree reduction of ``block`` values by ``block`` threads.

    Each step is ``(s, active, words)``: the stride, the threads that add, and the shared-memory
    word each of them updates (``sdata[words] += sdata[words + s]``). The three layouts of
    Harris's reduction kernels 1 to 3:

    * ``"interleaved"``: ``s = 1, 2, 4, ...``; thread ``t`` adds if ``t % (2s) == 0``, at word ``t``.
    * ``"strided"``: the same pairs, but the first ``block / 2s`` threads do them, at word ``2 s t``.
    * ``"sequential"``: ``s = block/2, ..., 1``; thread ``t < s`` adds word ``t + s`` into word ``t``.

    Parameters
    ----------
    block : int
        Threads and values, a power of two from 32 to 1,024.
    scheme : str
        ``"interleaved"``, ``"strided"`` or ``"sequential"``.
    """
    block = check_positive_int("block", block)
    if block & (block - 1) or not WARP <= block <= MAX_BLOCK_THREADS:
        raise ValueError(f"block must be a power of two from {WARP} to {MAX_BLOCK_THREADS}, got {block}")
    if scheme not in TREE_SCHEMES[:3]:
        raise ValueError(f"scheme must be one of {TREE_SCHEMES[:3]}, got {scheme!r}")
    t = np.arange(block)
    strides = [block >> k for k in range(1, block.bit_length())]  # block/2, ..., 1
    steps = []
    for s in (strides if scheme == "sequential" else strides[::-1]):
        if scheme == "interleaved":
            active = t[t % (2 * s) == 0]
            steps.append((s, active, active))
        else:
            active = t[: block // (2 * s)] if scheme == "strided" else t[:s]
            steps.append((s, active, 2 * s * active if scheme == "strided" else active))
    return steps


@dataclass(frozen=True)
class TreeCosts:
    """What one block's reduction tree costs, counted in warp instructions."""

    steps: int  # levels of the tree
    barriers: int  # __syncthreads() calls, the one after the load included
    warp_steps: int  # warp-level add steps issued, each counted once per bank-conflict replay
    divergent_warp_steps: int  # warp steps in which some lanes add and others idle
    worst_conflict: int  # the largest bank-conflict degree of any step


def reduction_tree_costs(block, scheme) -> TreeCosts:
    """Count one block's tree reduction (:func:`tree_reduction_steps`), or its warp-shuffle forms.

    ``"last-warp"``: sequential addressing while at least 32 threads add, then the first warp
    finishes the last 32 values with five ``__shfl_down_sync`` steps, with no barrier and no idle lanes.
    ``"shuffle"``: each warp reduces its 32 values in registers with five ``__shfl_down_sync`` steps
    (no shared memory, no divergence), lane 0 of each warp writes one partial, one barrier, and the
    first warp reduces the ``block / 32`` partials the same way.
    """
    if scheme == "shuffle":
        tree_reduction_steps(block, "sequential")  # the same checks on block
        warps, levels = block // WARP, WARP.bit_length() - 1  # 5 shuffles reduce 32 lanes
        second = max(warps - 1, 0).bit_length()  # shuffles the first warp needs for the partials
        return TreeCosts(steps=levels + second, barriers=1, warp_steps=warps * levels + (second if warps > 1 else 0),
                         divergent_warp_steps=0, worst_conflict=1)
    if scheme == "last-warp":
        wide = [s for s, _, _ in tree_reduction_steps(block, "sequential") if s >= WARP]  # whole warps add
        levels = WARP.bit_length() - 1
        return TreeCosts(steps=len(wide) + levels, barriers=len(wide) + 1,
                         warp_steps=sum(s // WARP for s in wide) + levels, divergent_warp_steps=0, worst_conflict=1)
    steps = tree_reduction_steps(block, scheme)
    warp_steps, divergent, worst = 0, 0, 1
    for _, active, words in steps:
        lanes = np.zeros(block, dtype=bool)
        lanes[active] = True
        div, _ = divergent_warps(lanes)
        divergent += div
        for w in np.unique(active // WARP):
            degree = bank_conflict_degree(words[active // WARP == w])
            warp_steps, worst = warp_steps + degree, max(worst, degree)
    return TreeCosts(steps=len(steps), barriers=len(steps) + 1, warp_steps=warp_steps,
                     divergent_warp_steps=divergent, worst_conflict=worst)


@dataclass(frozen=True)
class LadderStep:
    """One version of a reduction kernel of ``n`` values: its launch and its per-block tree."""

    name: str
    blocks: int  # thread blocks launched, each leaving one partial sum
    loads_per_thread: int  # values each thread reads from global memory and adds serially
    tree: TreeCosts  # one block's tree

    @property
    def warp_steps(self) -> int:
        """Warp steps of all blocks' trees together."""
        return self.blocks * self.tree.warp_steps

    @property
    def barriers(self) -> int:
        """``__syncthreads()`` calls of all blocks together."""
        return self.blocks * self.tree.barriers


def reduction_ladder(n, block, resident_blocks) -> list[LadderStep]:
    """The optimisation ladder of a sum of ``n`` values, counted step by step.

    Harris's kernels 1-4 (interleaved with a divergent test, interleaved with a strided index,
    sequential addressing, first add during the load), then the last warp's five levels done with
    warp shuffles (his kernel 5 unrolled the last warp; shuffles are its safe form since Volta), then
    a grid-stride loop over a grid of ``resident_blocks`` with every warp reduced by shuffles (his
    kernel 7, written today with cooperative groups' ``cg::reduce``), where each thread adds ``ceil(n / (resident_blocks * block))`` values
    before the tree. ``n`` must be a multiple of ``2 * block``.
    """
    n, resident = check_positive_int("n", n), check_positive_int("resident_blocks", resident_blocks)
    tree_reduction_steps(block, "sequential")  # checks block
    if n % (2 * block):
        raise ValueError(f"n ({n}) must be a multiple of 2 * block = {2 * block}")
    rows = [("1 interleaved, divergent branch", n // block, 1, "interleaved"),
            ("2 interleaved, strided index", n // block, 1, "strided"),
            ("3 sequential addressing", n // block, 1, "sequential"),
            ("4 first add during load", n // (2 * block), 2, "sequential"),
            ("5 last warp by shuffles", n // (2 * block), 2, "last-warp"),
            ("6 grid-stride loop, cooperative groups", resident, -(-n // (resident * block)), "shuffle")]
    return [LadderStep(name, blocks, loads, reduction_tree_costs(block, scheme))
            for name, blocks, loads, scheme in rows]


def last_block_combine(partials, arrival, unfenced=()):
    """The last-block pattern of a multi-block sum, with and without ``__threadfence()``.

    Block ``b`` stores its partial sum, then takes a ticket with ``atomicInc`` on a counter; the
    block whose ticket is the last one sums every partial. With a fence between the store and the
    ticket, the store is visible to every block before the ticket is. Without it, a block in
    ``unfenced`` is modelled at its worst: its store becomes visible only after all tickets are
    taken, so the last block reads the stale zero.

    Parameters
    ----------
    partials : sequence of float, shape (blocks,)
        Each block's partial sum.
    arrival : sequence of int, shape (blocks,)
        The order in which blocks take their tickets, a permutation of ``range(blocks)``.
    unfenced : iterable of int
        Blocks whose store the counter overtakes.

    Returns
    -------
    total, last : float, int
        The sum the last block computes, and which block computed it.
    """
    partials = np.asarray(partials, dtype=np.float64)
    arrival = [int(b) for b in arrival]
    if partials.ndim != 1 or sorted(arrival) != list(range(partials.size)) or partials.size == 0:
        raise ValueError(f"arrival must be a permutation of the {partials.size} blocks, got {arrival}")
    visible = np.zeros_like(partials)  # the partials buffer in global memory, zeroed
    late = set(unfenced)
    for block in arrival:  # each block: store its partial (or not yet), then take a ticket
        if block not in late:
            visible[block] = partials[block]
    return float(visible.sum()), arrival[-1]


def fatbin_code_for(targets, device) -> tuple[str, str]:
    """Which code of a fat binary a GPU of compute capability ``device`` runs: ``(kind, target)``.

    The rules of the NVCC documentation: SASS built for ``sm_XY`` runs on any GPU of the same major
    version ``X`` with minor version at least ``Y``; SASS for an architecture-specific ``sm_XYa``
    runs only on ``X.Y``; failing both, the driver JIT-compiles the newest PTX ``compute_XY`` (or
    ``compute_XYa`` on exactly ``X.Y``) that is not newer than the device; failing that, the binary
    cannot run. SASS is preferred over PTX, the newest matching SASS over older.

    Parameters
    ----------
    targets : sequence of str
        The codes in the binary, e.g. ``["sm_80", "sm_90a", "compute_90"]``.
    device : str
        Compute capability, e.g. ``"9.0"``.

    Returns
    -------
    kind, target : str
        ``("sass", "sm_..")``, ``("ptx-jit", "compute_..")``, or ``("none", "")``.
    """
    try:
        major, minor = (int(p) for p in device.split("."))
    except (AttributeError, ValueError):
        raise ValueError(f"device must be a compute capability like '9.0', got {device!r}") from None
    parsed = []
    for target in targets:
        kind, _, arch = target.partition("_")
        if kind not in ("sm", "compute") or not arch.rstrip("a").isdigit() or len(arch.rstrip("a")) < 2:
            raise ValueError(f"targets must look like 'sm_90', 'sm_90a' or 'compute_90', got {target!r}")
        x, y, specific = int(arch.rstrip("a")[:-1]), int(arch.rstrip("a")[-1]), arch.endswith("a")
        fits = (x, y) == (major, minor) if specific else (x == major and y <= minor if kind == "sm"
                                                           else (x, y) <= (major, minor))
        if fits:
            parsed.append((kind == "sm", x, y, specific, target))
    if not parsed:
        return "none", ""
    is_sass, *_, target = max(parsed)
    return ("sass" if is_sass else "ptx-jit"), target
