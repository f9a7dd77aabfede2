"""Data-parallel training: when FSDP with TP stays compute-bound, DDP's gradient buckets, the rank mean.

* :func:`fsdp_tp_min_batch`: the global token batch above which a forward layer under FSDP over ``X`` chips
  and tensor parallelism over ``Y`` chips hides its collectives behind its matmuls (Austin et al. 2025,
  "How to Scale Your Model", Part 5, "Mixed FSDP and Tensor Parallelism": ``F / (Y M_X) + B / (X M_Y) <
  B F / (N alpha)``, ``alpha = C / W_ici``); :func:`fsdp_tp_batch_floor`, the per-chip floor at the best split,
  ``4 alpha**2 / (M_X M_Y F)``.
* :func:`ddp_bucket_overhead` and :func:`ddp_optimal_buckets`: the time a bucketed gradient all-reduce adds
  after the backward pass, ``n_b o + s / (n_b w)``, and the bucket count that minimises it.
* :func:`dp_average_gradient`: the gradient data parallelism applies, averaged per rank then across ranks
  (DDP with a mean loss) or summed and divided by the global token count.

Book: chapter "Tensor parallelism", sections ``tensor_parallel-fsdp-batch`` and ``tensor_parallel-ddp-buckets``.
"""
from __future__ import annotations

import math

import numpy as np

from .config import check_positive_int, check_positive_number


def fsdp_tp_min_batch(d_ff, fsdp, tp, flops, link_bytes_per_s, fsdp_axes=1, tp_axes=1) -> float:
    """Global batch (tokens) above which an FSDP x TP forward layer is compute-bound; ``inf`` if never.

    Per layer, FSDP all-gathers the weight shards, ``4 D F / (Y W M_X)`` seconds, TP gathers and
    reduce-scatters the activations, ``4 B D / (X W M_Y)`` (none when ``tp == 1``), and the two matmuls take
    ``4 B D F / (N C)``; ``D`` cancels. Solving ``F / (Y M_X) + B / (X M_Y) = B F / (N alpha)`` for ``B``
    (Scaling Book Part 5). Divide by ``fsdp * tp`` for the batch per chip.

    Parameters
    ----------
    d_ff : int
        MLP width F.
    fsdp, tp : int
        Chips on the FSDP axis (X) and the tensor-parallel axis (Y); N = X Y.
    flops, link_bytes_per_s : float
        Chip FLOP/s C and the link bandwidth W of one mesh axis.
    fsdp_axes, tp_axes : int
        Mesh axes each degree spans (M_X, M_Y); each axis adds its bandwidth.
    """
    f, x, y, mx, my = (check_positive_int(k, v) for k, v in
                       (("d_ff", d_ff), ("fsdp", fsdp), ("tp", tp), ("fsdp_axes", fsdp_axes), ("tp_axes", tp_axes)))
    alpha = check_positive_number("flops", flops) / check_positive_number("link_bytes_per_s", link_bytes_per_s)
    slope = f / (x * y * alpha) - (1 / (x * my) if y > 1 else 0.0)  # compute minus TP comm, per token of B
    return f / (y * mx) / slope if slope > 0 else math.inf


def fsdp_tp_batch_floor(d_ff, flops, link_bytes_per_s, fsdp_axes=1, tp_axes=1) -> float:
    """Smallest batch per chip, ``B / N = 4 alpha**2 / (M_X M_Y F)``, at the best FSDP/TP split.

    The split that minimises communication is ``X = sqrt(B M_X N / (F M_Y))`` (Scaling Book Part 5); at it the
    mix stays compute-bound down to this batch per chip, against ``alpha / M_X`` for FSDP alone.
    """
    f, mx, my = (check_positive_int(k, v) for k, v in (("d_ff", d_ff), ("fsdp_axes", fsdp_axes), ("tp_axes", tp_axes)))
    alpha = check_positive_number("flops", flops) / check_positive_number("link_bytes_per_s", link_bytes_per_s)
    return 4 * alpha**2 / (mx * my * f)


def ddp_bucket_overhead(total_bytes, bytes_per_s, call_overhead_s, num_buckets) -> float:
    """Seconds a bucketed gradient all-reduce adds after the backward pass: ``n_b o + s / (n_b w)``.

    Assumes the backward produces each bucket in the time its transfer takes, ``s / (n_b w)``: every call then
    starts ``o`` later than the one before, the delays add up to ``n_b o``, and the last bucket's transfer
    cannot overlap anything. ``w`` is the all-reduce's algorithm bandwidth (bytes of one rank's buffer over
    the time the collective takes).
    """
    s = check_positive_number("total_bytes", total_bytes)
    w = check_positive_number("bytes_per_s", bytes_per_s)
    if isinstance(call_overhead_s, bool) or not isinstance(call_overhead_s, (int, float)) or call_overhead_s < 0:
        raise ValueError(f"call_overhead_s must be a number >= 0, got {call_overhead_s!r}")
    n = check_positive_int("num_buckets", num_buckets)
    return n * call_overhead_s + s / (n * w)


def ddp_optimal_buckets(total_bytes, bytes_per_s, call_overhead_s) -> dict:
    """The bucket count minimising :func:`ddp_bucket_overhead`: ``n_b = sqrt(s / (w o))``.

    Returns ``{"num_buckets": the real optimum, "bucket_bytes": sqrt(s w o), "overhead_s": 2 sqrt(s o / w)}``.
    """
    s = check_positive_number("total_bytes", total_bytes)
    w = check_positive_number("bytes_per_s", bytes_per_s)
    o = check_positive_number("call_overhead_s", call_overhead_s)
    return {"num_buckets": math.sqrt(s / (w * o)), "bucket_bytes": math.sqrt(s * w * o),
            "overhead_s": 2 * math.sqrt(s * o / w)}


def dp_average_gradient(token_grads, rank_of_token, num_ranks, normalise="rank_mean"):
    """The gradient data parallelism applies, from per-token gradients split over ``num_ranks`` ranks.

    Parameters
    ----------
    token_grads : ndarray, shape (n_tokens, p)
        Gradient of each token's loss.
    rank_of_token : ndarray of int, shape (n_tokens,)
        Which rank holds each token; every rank must hold at least one.
    normalise : "rank_mean" or "global_tokens"
        ``"rank_mean"``: each rank's mean, then the mean over ranks (a mean-reduced loss under DDP's
        averaging all-reduce). ``"global_tokens"``: each rank's sum over the global token count, summed.

    Returns
    -------
    ndarray, shape (p,)
    """
    g = np.asarray(token_grads, dtype=np.float64)
    ranks = np.asarray(rank_of_token)
    n = check_positive_int("num_ranks", num_ranks)
    if g.ndim != 2 or ranks.shape != (g.shape[0],):
        raise ValueError(f"token_grads must be (n_tokens, p) and rank_of_token (n_tokens,), got {g.shape}, {ranks.shape}")
    counts = np.bincount(ranks, minlength=n)  # (num_ranks,) tokens each rank holds
    if counts.size != n or (counts == 0).any():
        raise ValueError(f"every rank 0..{n - 1} must hold at least one token, got counts {counts.tolist()}")
    sums = np.stack([g[ranks == r].sum(axis=0) for r in range(n)])  # (num_ranks, p)
    if normalise == "rank_mean":
        return (sums / counts[:, None]).mean(axis=0)
    if normalise == "global_tokens":
        return sums.sum(axis=0) / counts.sum()
    raise ValueError(f"normalise must be 'rank_mean' or 'global_tokens', got {normalise!r}")
