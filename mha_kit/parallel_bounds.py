"""Derivations behind the parallelism questions: exact attention op counts, attention's own
intensity, how far tensor parallelism goes at decode, 1D against 2D weight sharding, pass-KV
against pass-Q, and the idle time of a pipeline whose micro-batches differ in cost.

Every function counts elements or operations with integers where the count is exact; bytes
follow from ``elements_to_bytes``. The chapters that use them: ``attention_cost``,
``tensor_parallel`` and ``context_parallelism``.

>>> import mha_kit as mk
>>> mk.attention_only_intensity(4096, 4096, num_heads=32, num_kv_heads=32)  # MHA, bf16: T S / (T + S)
2048.0
"""
from __future__ import annotations

import math

from .config import check_positive_int


def attention_op_counts(n_q, n_k, d_k, d_v) -> dict:
    """Exact scalar operations of ``softmax(Q K^T / sqrt(d_k)) V`` for one head.

    Parameters
    ----------
    n_q, n_k : int
        Queries (rows of ``Q``, shape ``(n_q, d_k)``) and keys (rows of ``K``, ``(n_k, d_k)``).
    d_k, d_v : int
        Key width and value width (``V`` has shape ``(n_k, d_v)``).

    Returns
    -------
    dict
        ``qk_mul``, ``qk_add`` (a dot product of length ``d_k`` is ``d_k`` products and
        ``d_k - 1`` sums), ``scale_mul``, ``max_cmp`` and ``max_sub`` (the row maximum and its
        subtraction), ``exp``, ``sum_add`` (row sums), ``div``, ``pv_mul``, ``pv_add``.
        Chapter: attention_cost, "Counting every operation".
    """
    nq, nk = check_positive_int("n_q", n_q), check_positive_int("n_k", n_k)
    dk, dv = check_positive_int("d_k", d_k), check_positive_int("d_v", d_v)
    scores = nq * nk  # (n_q, d_k) @ (d_k, n_k) -> (n_q, n_k)
    return {"qk_mul": scores * dk, "qk_add": scores * (dk - 1), "scale_mul": scores,
            "max_cmp": nq * (nk - 1), "max_sub": scores, "exp": scores, "sum_add": nq * (nk - 1),
            "div": scores, "pv_mul": nq * dv * nk, "pv_add": nq * dv * (nk - 1)}  # (n_q, n_k) @ (n_k, d_v)


def attention_only_intensity(tokens, context, num_heads, num_kv_heads, bytes_per_element=2) -> float:
    """FLOPs per byte of attention alone (no projections): ``T`` queries over ``S`` keys.

    FLOPs are ``4 h T S d_h`` (scores and the mix); bytes are ``b (2 T h d_h + 2 S h_kv d_h)``
    (read ``Q``, write ``O``, read ``K`` and ``V``). ``d_h`` cancels:
    ``I = 2 h T S / (b (T h + S h_kv))``, which is ``T S / (T + S)`` for multi-head attention in
    bf16 (Austin et al. 2025, scaling-book transformers.md, Question 4).
    """
    t, s = check_positive_int("tokens", tokens), check_positive_int("context", context)
    h, hkv = check_positive_int("num_heads", num_heads), check_positive_int("num_kv_heads", num_kv_heads)
    if h % hkv:
        raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({hkv})")
    if bytes_per_element <= 0:
        raise ValueError(f"bytes_per_element must be positive, got {bytes_per_element}")
    return 2 * h * t * s / (bytes_per_element * (t * h + s * hkv))


def tp_decode_comm_bound(ffn_dim, batch, hbm_bytes_per_s, link_bytes_per_s, matrices=2) -> float:
    """Tensor-parallel degree past which a decode MLP's all-reduce outlasts reading its weights.

    Per GPU the MLP reads ``matrices * D * F / Y`` weights from HBM and all-reduces about ``2 B D``
    numbers over the link (ring, ``Y`` large), both in the same format, so communication dominates
    once ``Y > matrices * F / (2 B beta)`` with ``beta = W_hbm / W_link``. With two matrices this
    is the scaling book's ``F / (B beta)`` (inference.md, "Note on ICI bounds for generation");
    a gated MLP has three.
    """
    f, b = check_positive_int("ffn_dim", ffn_dim), check_positive_int("batch", batch)
    m = check_positive_int("matrices", matrices)
    if hbm_bytes_per_s <= 0 or link_bytes_per_s <= 0:
        raise ValueError(f"bandwidths must be positive, got {hbm_bytes_per_s} and {link_bytes_per_s}")
    beta = hbm_bytes_per_s / link_bytes_per_s
    return m * f / (2 * b * beta)


def sharded_matmul_traffic(batch, contract_dim, out_dim, ways) -> dict:
    """Elements each GPU sends and multiply-adds it does for ``x (B, K) @ W (K, N)``, ``K`` split.

    ``gather``: all-gather ``W`` and multiply locally, ``(Y-1)/Y * K N`` elements per GPU and the
    full ``B K N`` multiply-adds on every GPU. ``all_reduce``: multiply the local shard, then
    ring all-reduce the ``(B, N)`` partial outputs, ``2 (Y-1)/Y * B N`` elements, ``B K N / Y``
    multiply-adds (scaling-book sharding.md, Question 4).
    """
    b, k = check_positive_int("batch", batch), check_positive_int("contract_dim", contract_dim)
    n, y = check_positive_int("out_dim", out_dim), check_positive_int("ways", ways)
    if k % y or n % y:
        raise ValueError(f"contract_dim ({k}) and out_dim ({n}) must be divisible by ways ({y})")
    return {"gather": {"sent": (y - 1) * (k // y) * n, "macs": b * k * n},
            "all_reduce": {"sent": 2 * (y - 1) * b * (n // y), "macs": b * (k // y) * n}}


def weight_stationary_comm(batch, d_model, d_ff, chips, x=None) -> tuple:
    """Elements each chip sends per MLP (two matrices) under 1D or 2D weight-stationary sharding.

    1D (Megatron): all-gather and reduce-scatter of the ``(B, D)`` activation over all ``n``
    chips, ``2 (n-1)/n * B D``. 2D on an ``X x (n/X)`` grid (Pope et al. 2022 sec. 3.2.2;
    scaling-book inference.md Question 7): all-gather ``(B, D/X)`` over the ``n/X`` axis,
    all-reduce ``(B, F/(n/X))`` over ``X``, reduce-scatter ``(B, D/X)`` over ``n/X``, ring costs.
    ``x=None`` tries every divisor of ``n`` and keeps the cheapest. Returns ``(one_d, two_d, x)``.
    """
    b, d = check_positive_int("batch", batch), check_positive_int("d_model", d_model)
    f, n = check_positive_int("d_ff", d_ff), check_positive_int("chips", chips)
    one_d = 2 * (n - 1) * b * d / n
    xs = [x] if x is not None else [v for v in range(1, n + 1) if n % v == 0]
    if x is not None and (check_positive_int("x", x) > n or n % x):
        raise ValueError(f"x ({x}) must divide chips ({n})")
    cost = {v: 2 * (n // v - 1) / (n // v) * b * d / v + 2 * (v - 1) / v * b * f / (n // v) for v in xs}
    best = min(cost, key=cost.get)
    return one_d, cost[best], best


def ring_pass_elements(new_tokens, cached_tokens, num_heads, num_kv_heads, head_dim, ranks) -> dict:
    """Elements each rank sends per layer in ring attention over ``c`` ranks, pass-KV or pass-Q.

    ``T`` new tokens meet ``P`` cached ones; each rank holds ``1/c`` of both. pass-KV circulates
    every rank's keys and values, ``(c-1) (T+P)/c * 2 h_kv d_h``. pass-Q circulates the queries,
    ``(c-1) T/c * h d_h``, and then returns each partial output with its log-sum-exp to the
    query's owner, ``(c-1) T/c * h (d_h + 1)`` (Yang et al. 2024, arXiv:2411.01783 sec. 3).
    """
    t, p = check_positive_int("new_tokens", new_tokens), int(cached_tokens)
    if p < 0:
        raise ValueError(f"cached_tokens must be non-negative, got {cached_tokens}")
    h, hkv = check_positive_int("num_heads", num_heads), check_positive_int("num_kv_heads", num_kv_heads)
    dh, c = check_positive_int("head_dim", head_dim), check_positive_int("ranks", ranks)
    if t % c or p % c:
        raise ValueError(f"new_tokens ({t}) and cached_tokens ({p}) must be divisible by ranks ({c})")
    return {"pass_kv": (c - 1) * (t + p) // c * 2 * hkv * dh, "pass_q_ring": (c - 1) * t // c * h * dh,
            "pass_q_return": (c - 1) * t // c * h * (dh + 1)}


def pipeline_idle_fraction(costs, stages) -> float:
    """Idle share of ``p`` stages when micro-batches of the given per-stage costs flow through.

    Each micro-batch takes ``costs[i]`` on every stage (its tokens set the time); stage ``s``
    starts micro-batch ``i`` once it has finished ``i-1`` and stage ``s-1`` has finished ``i``.
    Equal costs give GPipe's ``(p-1)/(m+p-1)``; unequal ones add idle time at every switch.
    """
    p = check_positive_int("stages", stages)
    if len(costs) == 0 or min(costs) <= 0:
        raise ValueError(f"costs must be a non-empty list of positive numbers, got {costs}")
    done = [0.0] * p  # finish time of the last micro-batch on each stage
    for c in costs:
        for s in range(p):
            done[s] = max(done[s], done[s - 1] if s else 0.0) + c
    return 1.0 - p * math.fsum(costs) / (p * done[-1])
