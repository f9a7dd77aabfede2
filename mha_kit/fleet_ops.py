"""Fleet operations in numbers: how close a step is to the hardware, a batching controller, edge power,
isolating a query of death, early exit in a batch, and pulling weights onto many nodes.

>>> import mha_kit as mk
>>> round(mk.bandwidth_utilisation(16e9, 0.010, 3.35e12), 3)  # 16 GB read in a 10 ms step on an H100
0.478

Book: chapters "Plan a deployment", "Serving in production", "Overload, failures and rollouts",
"Scheduling and cache policy", "Many models, adapters and tenants", "Speculative decoding".
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .config import check_positive_int, check_positive_number


def bandwidth_utilisation(bytes_per_step, step_s, peak_bandwidth) -> float:
    """Model bandwidth utilisation (MBU): ``bytes_per_step / step_s / peak_bandwidth``.

    ``bytes_per_step`` is what one step must read (a decode step: the weights plus the batch's KV
    cache), ``step_s`` the measured step (the TPOT), ``peak_bandwidth`` the HBM peak in bytes/s
    (Databricks 2023). 1.0 is the roofline's memory floor.

    Book: chapter "Plan a deployment", section on MBU and MFU.
    """
    return check_positive_number("bytes_per_step", bytes_per_step) / check_positive_number("step_s", step_s) / check_positive_number(
        "peak_bandwidth", peak_bandwidth)


def flops_utilisation(flops_per_step, step_s, peak_flops) -> float:
    """Model FLOPs utilisation (MFU): ``flops_per_step / step_s / peak_flops``.

    ``flops_per_step`` counts the model's FLOPs only (about ``2 N`` per token for ``N`` parameters,
    plus attention), not recomputation or padding (PaLM, Chowdhery et al. 2022, App. B).

    Book: chapter "Plan a deployment", section on MBU and MFU.
    """
    return check_positive_number("flops_per_step", flops_per_step) / check_positive_number("step_s", step_s) / check_positive_number(
        "peak_flops", peak_flops)


def aimd_batch_trace(base_s, per_item_s, target_s, *, start=1, increase=1, backoff=0.9, hysteresis=0.0,
                     max_batch=1024):
    """Batch caps chosen step by step by additive increase, multiplicative decrease (Clipper, sec. 4.3.1).

    Step ``i`` runs a batch of ``b_i`` in ``base_s[i] + per_item_s * b_i`` seconds. Over the target,
    the cap becomes ``max(1, floor(backoff * b))``; under ``(1 - hysteresis) * target_s`` it grows by
    ``increase``, up to ``max_batch``; in the band between, it stays (hysteresis = 0: Clipper's rule).

    Parameters
    ----------
    base_s : array_like, shape (steps,)
        Fixed part of each step's latency (it moves with the traffic mix).
    per_item_s, target_s : float
    start, increase, max_batch : int
    backoff : float in (0, 1)
    hysteresis : float in [0, 1)

    Returns
    -------
    batches, latencies : ndarray, shape (steps,)

    Book: chapter "Scheduling and cache policy".
    """
    base = np.asarray(base_s, dtype=float)  # (steps,)
    if base.ndim != 1 or base.size == 0 or not np.all(base >= 0):
        raise ValueError(f"base_s must be a non-empty 1-D array of seconds >= 0, got shape {base.shape}")
    per, target = check_positive_number("per_item_s", per_item_s), check_positive_number("target_s", target_s)
    if not 0 < backoff < 1 or not 0 <= hysteresis < 1:
        raise ValueError(f"need 0 < backoff < 1 and 0 <= hysteresis < 1, got backoff={backoff}, "
                         f"hysteresis={hysteresis}")
    b, step, cap = check_positive_int("start", start), check_positive_int("increase", increase), check_positive_int(
        "max_batch", max_batch)
    batches, latencies = np.empty(base.size, dtype=int), np.empty(base.size)
    for i, fixed in enumerate(base):
        batches[i], latencies[i] = b, fixed + per * b
        if latencies[i] > target:
            b = max(1, math.floor(backoff * b))
        elif latencies[i] < (1 - hysteresis) * target:
            b = min(cap, b + step)
    return batches, latencies


def edge_decode_ceiling(weight_bytes, bandwidth, watts) -> tuple:
    """``(tokens_per_s, tokens_per_joule)`` of batch-1 decode on a board that reads every weight each token.

    The ceiling is ``bandwidth / weight_bytes`` tokens/s (the cache and activations are left out);
    dividing by the board's power budget ``watts`` gives tokens per joule.

    Book: chapter "Overload, failures and rollouts", section on the edge.
    """
    rate = check_positive_number("bandwidth", bandwidth) / check_positive_number("weight_bytes", weight_bytes)
    return rate, rate / check_positive_number("watts", watts)


def isolation_replays(batch_size) -> int:
    """Replays that find one crashing request in a batch by halving: ``ceil(log2(batch_size))``.

    Each replay runs half of the suspects on a canary; a crash keeps that half, no crash the other
    (binary search; one offender assumed, deterministic crash).

    Book: chapter "Overload, failures and rollouts".
    """
    return math.ceil(math.log2(check_positive_int("batch_size", batch_size)))


def batched_early_exit_layers(p_exit, exit_layer, num_layers, batch_size) -> float:
    """Expected layers a lockstep batch runs when each token may leave at ``exit_layer``.

    Every token exits early with probability ``p_exit``, independently; the batch stops early only
    if all ``batch_size`` tokens do: ``L - (L - e) * p_exit ** batch_size``.

    Book: chapter "Speculative decoding", section on early exit.
    """
    if isinstance(p_exit, bool) or not isinstance(p_exit, numbers.Real) or not 0 <= p_exit <= 1:
        raise ValueError(f"p_exit must be a probability in [0, 1], got {p_exit!r}")
    e, n, b = (check_positive_int(k, v) for k, v in (("exit_layer", exit_layer), ("num_layers", num_layers),
                                                      ("batch_size", batch_size)))
    if e > n:
        raise ValueError(f"exit_layer ({e}) must be at most num_layers ({n})")
    return n - (n - e) * p_exit ** b


def weight_pull_seconds(nodes, weight_bytes, store_bandwidth, node_bandwidth, *, peer_to_peer=False,
                        chunk_bytes=256 * 2**20) -> float:
    """Seconds until ``nodes`` nodes hold ``weight_bytes`` of weights pulled from one store.

    From the store alone, all nodes share its ``store_bandwidth`` and each is capped by its own
    ``node_bandwidth``: ``max(nodes * W / store, W / node)``. Peer to peer as a pipelined chain
    (the store feeds one node, each node forwards chunks to the next):
    ``W / min(store, node) + (nodes - 1) * chunk / node``.

    Book: chapter "Many models, adapters and tenants", section on scale-out.
    """
    n = check_positive_int("nodes", nodes)
    w, store, node = (check_positive_number(k, v) for k, v in (("weight_bytes", weight_bytes),
                                                   ("store_bandwidth", store_bandwidth),
                                                   ("node_bandwidth", node_bandwidth)))
    if not peer_to_peer:
        return max(n * w / store, w / node)
    return w / min(store, node) + (n - 1) * check_positive_number("chunk_bytes", chunk_bytes) / node
