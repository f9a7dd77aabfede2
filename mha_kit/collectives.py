"""The cost of one collective, alpha-beta: a fixed cost per step plus the bytes over the link.

A collective of ``M`` bytes over ``n`` ranks takes ``steps * alpha + factor * M / beta``: ``alpha``
is the latency of one step (a kernel's hand-off, a flag, a hop), ``beta`` the link's bytes per
second, one way. The algorithms differ in the two numbers (Thakur, Rabenseifner & Gropp 2005,
sec. 4; Sanders, Speck & Traeff 2009 for the two-tree form NCCL uses):

* ``"ring"``: reduce-scatter then all-gather around a ring, ``2 (n - 1)`` steps, each GPU sending
  ``2 (n - 1) / n`` of the message: the least bytes, the most steps.
* ``"tree"``: a pipelined reduce up a binary tree and broadcast down it, ``2 ceil(log2 n)`` steps
  and about ``2 M`` bytes per GPU (NCCL's double binary tree runs two trees on half the data each).
* ``"one-shot"``: every GPU reads all ``n - 1`` peers' whole buffers over NVLink peer access and
  sums them itself: one step, ``(n - 1) M`` bytes read per GPU (vLLM's
  ``cross_device_reduce_1stage``).
* ``"two-shot"``: a reduce-scatter then an all-gather, each in one step through peer buffers:
  two steps, the ring's bytes (vLLM's ``cross_device_reduce_2stage``).

>>> import mha_kit as mk
>>> round(1e6 * mk.collective_time(16_384, 8, "ring", 0.6e-6, 450e9, base_latency_s=6.6e-6), 1)
15.1
"""
from __future__ import annotations

import math

from .config import check_positive_int
from .units import elements_to_bytes

COLLECTIVE_ALGORITHMS = ("ring", "tree", "one-shot", "two-shot")


def collective_steps_and_factor(ranks, algorithm) -> tuple:
    """``(steps, byte factor)`` of an all-reduce over ``ranks`` GPUs: time = steps alpha + factor M / beta."""
    n = check_positive_int("ranks", ranks)
    if n < 2:
        raise ValueError(f"an all-reduce needs at least 2 ranks, got {n}")
    if algorithm == "ring":
        return 2 * (n - 1), 2 * (n - 1) / n
    if algorithm == "tree":
        return 2 * math.ceil(math.log2(n)), 2.0
    if algorithm == "one-shot":
        return 1, float(n - 1)
    if algorithm == "two-shot":
        return 2, 2 * (n - 1) / n
    raise ValueError(f"algorithm must be one of {COLLECTIVE_ALGORITHMS}, got {algorithm!r}")


def collective_time(message_bytes, ranks, algorithm, step_latency_s, bytes_per_s, base_latency_s=0.0) -> float:
    """Seconds for an all-reduce of ``message_bytes`` over ``ranks`` GPUs, alpha-beta model.

    ``base_latency_s + steps * step_latency_s + factor * message_bytes / bytes_per_s`` with
    ``(steps, factor)`` from :func:`collective_steps_and_factor`. NCCL's own tuner has this form:
    a base latency per algorithm and protocol plus a per-step hardware latency
    (``src/graph/tuning.cc``: ring all-reduce adds ``2 (n - 1)`` steps).
    """
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, (int, float)) or message_bytes < 0:
        raise ValueError(f"message_bytes must be a number >= 0, got {message_bytes!r}")
    for name, value in (("step_latency_s", step_latency_s), ("base_latency_s", base_latency_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    if isinstance(bytes_per_s, bool) or not isinstance(bytes_per_s, (int, float)) or not bytes_per_s > 0:
        raise ValueError(f"bytes_per_s must be a positive number, got {bytes_per_s!r}")
    steps, factor = collective_steps_and_factor(ranks, algorithm)
    return base_latency_s + steps * step_latency_s + factor * message_bytes / bytes_per_s


def tp_layer_comm_bytes(num_tokens, d_model, tp, sequence_parallel=False, fmt="bf16") -> dict:
    """Bytes each GPU sends per decoder layer under ``tp``-way Megatron tensor parallelism.

    Plain (Megatron): two ring all-reduces of the ``(n, d)`` output, each ``2 (t - 1) / t`` of it.
    Sequence parallel (Korthikanti et al. 2022, sec. 4.2.2): each all-reduce becomes a
    reduce-scatter (``(t - 1) / t``, leaving ``n / t`` tokens per GPU for the norm and dropout)
    and an all-gather (``(t - 1) / t``) before the next column-parallel matmul: the same bytes.
    Returns ``{"sent": bytes, "activation_rows": tokens a GPU keeps between the blocks}``.
    """
    n, d, t = (check_positive_int(k, v) for k, v in (("num_tokens", num_tokens), ("d_model", d_model), ("tp", tp)))
    if sequence_parallel and n % t:
        raise ValueError(f"num_tokens ({n}) must be divisible by tp ({t}) under sequence parallelism: "
                         "each GPU keeps n / t tokens")
    if (n * d) % t:
        raise ValueError(f"num_tokens * d_model ({n * d}) must be divisible by tp ({t}): the ring splits it")
    share = (t - 1) * (n * d // t)  # numbers one GPU sends in one reduce-scatter or one all-gather
    sent = 2 * (2 * share)  # two collectives a layer, each a reduce-scatter + an all-gather's worth
    return {"sent": elements_to_bytes(sent, fmt), "activation_rows": n // t if sequence_parallel else n}


def afd_bytes_per_step(num_tokens, d_model, num_layers, copies=1, dispatch_fmt="fp8", combine_fmt="bf16") -> tuple:
    """Bytes attention GPUs send to FFN GPUs and back in one decode step of attention-FFN disaggregation.

    Per layer each token's hidden vector (``d`` numbers) goes from attention to the FFN side and
    its output comes back: ``copies = 1`` when one FFN instance computes the whole FFN (Step-3),
    ``copies = top_k`` when each token is sent to every expert node it routes to (MegaScale-Infer's
    M2N). Returns ``(attention_to_ffn, ffn_to_attention)`` bytes for ``num_layers`` layers.
    """
    n, d, layers, c = (check_positive_int(k, v) for k, v in
                       (("num_tokens", num_tokens), ("d_model", d_model), ("num_layers", num_layers), ("copies", copies)))
    numbers = n * d * layers * c  # numbers each way
    return elements_to_bytes(numbers, dispatch_fmt), elements_to_bytes(numbers, combine_fmt)


# NCCL 2.30.7, src/graph/tuning.cc, ncclTunerConstantsDefaults (microseconds), for LL / LL128 / Simple:
# baseLatencies[algorithm] and hwLatencies[NVLINK or NET][algorithm].
NCCL_BASE_LATENCY_US = {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4)}
NCCL_HW_LATENCY_US = {"nvlink": {"ring": (0.6, 1.9, 3.4), "tree": (0.6, 1.25, 4.0)},
                      "net": {"ring": (2.7, 4.0, 14.0), "tree": (5.0, 8.5, 14.0)}}
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")


def nccl_allreduce_latency_s(gpus_per_node, nodes, algorithm, protocol="LL") -> float:
    """The fixed (alpha) part of an all-reduce as NCCL's tuner models it, in seconds (NVLink inside a node).

    Ring: ``base + (steps - inter) * intra + inter * net`` with ``steps = 2 (n - 1)`` and
    ``inter = 2 (nodes - 1)`` network steps; across nodes each intra step costs at least the
    network overhead (1 us on x86, times 3 for Simple). Tree: ``base + 2 ((g - 1) * intra +
    log2(nodes) * net)``: inside a node NCCL's tree is a chain through the ``g`` GPUs, and only the
    nodes form the (double binary) tree. Transcribes ``ncclTopoTuneModel``, ``src/graph/tuning.cc``
    (NCCL 2.30.7), with no extra inter-node latency from the topology file.
    """
    g, m = check_positive_int("gpus_per_node", gpus_per_node), check_positive_int("nodes", nodes)
    if g * m < 2:
        raise ValueError(f"an all-reduce needs at least 2 ranks, got {g} x {m}")
    if algorithm not in NCCL_BASE_LATENCY_US:
        raise ValueError(f"algorithm must be 'ring' or 'tree' (NCCL_ALGO Ring, Tree), got {algorithm!r}")
    if protocol not in NCCL_PROTOCOLS:
        raise ValueError(f"protocol must be one of {NCCL_PROTOCOLS} (NCCL_PROTO), got {protocol!r}")
    p = NCCL_PROTOCOLS.index(protocol)
    base = NCCL_BASE_LATENCY_US[algorithm][p]
    intra = NCCL_HW_LATENCY_US["nvlink"][algorithm][p]
    net = NCCL_HW_LATENCY_US["net"]["tree" if g == 1 else algorithm][p]  # one GPU a node: the tree's net latency
    if algorithm == "ring":
        steps, inter = 2 * (g * m - 1), (0 if m == 1 else 2 * (m - 1))
        if m > 1:
            intra = max(intra, 3.0 if protocol == "Simple" else 1.0)
        return 1e-6 * (base + (steps - inter) * intra + inter * net)
    return 1e-6 * (base + 2 * ((g - 1) * intra + int(math.log2(m)) * net))
