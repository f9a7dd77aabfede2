"""Overlapping a tensor-parallel collective with the GEMM beside it, by splitting both into chunks.

Book: chapter "Tensor parallelism and the cache", section on AllGather-GEMM and GEMM-ReduceScatter.
"""
from __future__ import annotations


def chunked_overlap_time(compute_s: float, comm_s: float, world_size: int) -> tuple[float, float]:
    """Serial and overlapped time of an AllGather-GEMM split into one GEMM chunk per rank.

    The local chunk is multiplied first while the ``world_size - 1`` remote shards arrive one after
    another; chunk ``i`` starts when both its shard and the previous chunk are done. With ``k`` one
    chunk's compute and ``c`` one shard's transfer, the last chunk ends at ``k + (P - 1) max(k, c)``.
    GEMM-ReduceScatter is the mirror image (compute the chunk for each peer, send it while the next
    computes) with the same total.

    Parameters
    ----------
    compute_s : float
        Seconds of the whole GEMM on one GPU, unchunked (chunking's lost efficiency is not counted).
    comm_s : float
        Seconds to move the ``world_size - 1`` remote shards.
    world_size : int
        Ranks ``P`` (at least 2).

    Returns
    -------
    tuple of float
        ``(compute_s + comm_s, k + (P - 1) * max(k, c))`` with ``k = compute_s / P``, ``c = comm_s / (P - 1)``.
    """
    if world_size < 2 or compute_s < 0 or comm_s < 0:
        raise ValueError(f"need world_size >= 2 and non-negative times, got world_size={world_size}, "
                         f"compute_s={compute_s}, comm_s={comm_s}")
    k, c = compute_s / world_size, comm_s / (world_size - 1)
    return compute_s + comm_s, k + (world_size - 1) * max(k, c)
