"""Mixtures of experts: how many experts a step touches, and the expert weights it reads.

A MoE layer routes each token to ``k`` of its ``E`` routed experts (plus any shared experts). The
attention, and so the KV cache, does not depend on the experts. What a decode step reads does:
one token reads ``k`` experts per layer, a batch of ``n`` tokens reads every expert any of them
chose. Under uniform, independent routing the expected number of distinct experts is
``E (1 - (1 - k/E)^n)``: each expert is missed by one token with probability ``1 - k/E``.

>>> import mha_kit as mk
>>> round(mk.experts_touched(1, 256, 8), 6), round(mk.experts_touched(5, 256, 8), 1)
(8.0, 37.6)
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .config import check_positive_int
from .counting import model_params
from .models import ModelFacts
from .units import elements_to_bytes


def experts_touched(num_tokens, num_experts, top_k) -> float:
    """Expected distinct experts ``n`` tokens touch, each routed to ``top_k`` of ``num_experts``.

    ``E * (1 - (1 - k / E) ** n)`` under uniform routing: 8 for one DeepSeek-V3 token (``E = 256``,
    ``k = 8``), about 37.6 for five (a verification of 4 drafts), about 163 for 32; 0 for no token.
    Real routers are not uniform, so a real batch touches fewer distinct experts than this; it is
    the planning estimate. Shared experts, read by every token, are not counted.

    Book: chapters "Speculative decoding and the KV cache" and "Mixture-of-experts serving".
    """
    n = _check_count("num_tokens", num_tokens, 0)
    e, k = _check_count("num_experts", num_experts, 1), _check_count("top_k", top_k, 1)
    if k > e:
        raise ValueError(f"top_k ({k}) must not exceed num_experts ({e})")
    return e * (1.0 - (1.0 - k / e) ** n)


def _check_count(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_moe(facts):
    if not isinstance(facts, ModelFacts):
        raise ValueError(f"expected a ModelFacts record (mk.MODEL_FACTS[name]), got {type(facts).__name__}")
    if not facts.is_moe:
        raise ValueError(f"{facts.name} is not a mixture of experts (num_experts is None)")
    return facts


def expert_params(facts) -> int:
    """Parameters of one routed expert: a SwiGLU feed-forward, ``3 * d * d_ff_expert``."""
    facts = _check_moe(facts)
    return 3 * facts.config.d_model * facts.moe_intermediate_size


def routed_expert_params(facts) -> int:
    """Parameters of every routed expert of every MoE layer: ``moe_layers * E * expert_params``."""
    return _check_moe(facts).moe_layers * facts.num_experts * expert_params(facts)


def params_read_per_step(facts, num_tokens) -> float:
    """Parameters a forward step over ``num_tokens`` tokens reads, each weight once.

    Dense model: all of them. MoE: everything but the routed experts (attention, embeddings, dense
    layers, shared experts, routers), plus, in each MoE layer, the expected distinct routed experts
    (:func:`experts_touched`) times one expert's parameters. One token of DeepSeek-V3 reads about
    its 37B active parameters; a step of 32 tokens, far more.
    """
    n = check_positive_int("num_tokens", num_tokens)
    if not isinstance(facts, ModelFacts) or not facts.is_moe:
        return float(model_params(facts))
    always = model_params(facts) - routed_expert_params(facts)
    touched = experts_touched(n, facts.num_experts, facts.experts_per_token)
    return always + facts.moe_layers * touched * expert_params(facts)


def route_tokens(num_tokens, num_experts, top_k, rng, popularity=None):
    """Each token's ``top_k`` distinct experts, drawn at random: an ``(n, k)`` int array.

    ``popularity`` (length ``E``, positive) weights the draw: ``None`` is uniform routing, the
    assumption behind :func:`experts_touched`; a skewed one stands for a router with hot experts.
    A stand-in for a learned router, to count experts and loads, not to model a trained one.
    Each slot's expert is drawn with probability proportional to its popularity among the experts
    the token does not have yet (by rejection), the distribution of numpy's
    ``rng.choice(E, k, replace=False, p=popularity / popularity.sum())``, vectorised over tokens.
    """
    n, e, k = (check_positive_int(name, value) for name, value in
               (("num_tokens", num_tokens), ("num_experts", num_experts), ("top_k", top_k)))
    if k > e:
        raise ValueError(f"top_k ({k}) must not exceed num_experts ({e})")
    p = np.ones(e) if popularity is None else np.asarray(popularity, dtype=float)
    if p.shape != (e,) or not np.all(p > 0):
        raise ValueError(f"popularity must be {e} positive weights, got shape {p.shape}")
    cdf = np.cumsum(p / p.sum())  # (E,)
    # (n, k) expert indices as intp, numpy's index type: np.bincount and np.repeat refuse int64 where intp is 32 bits (the browser)
    choices = np.empty((n, k), dtype=np.intp)
    for slot in range(k):  # slot by slot for all tokens at once, as rng.choice(e, k, replace=False, p) draws
        todo, rounds = np.arange(n), 0  # tokens whose expert for this slot is still to draw
        while todo.size:  # a draw of an expert the token already has is rejected and drawn again
            if rounds == 8:  # the few tokens left (their experts hold most of the weight): zero those weights
                cdfs = np.tile(p, (todo.size, 1))  # (m, E)
                cdfs[np.arange(todo.size)[:, None], choices[todo, :slot]] = 0.0
                cdfs = np.cumsum(cdfs, axis=1)
                draw = np.minimum((cdfs <= rng.random(todo.size)[:, None] * cdfs[:, -1:]).sum(axis=1), e - 1)
            elif popularity is None:
                draw = rng.integers(0, e, todo.size)
            else:
                draw = np.minimum(np.searchsorted(cdf, rng.random(todo.size) * cdf[-1], side="right"), e - 1)
            repeat = (choices[todo, :slot] == draw[:, None]).any(axis=1)  # (len(todo),)
            choices[todo[~repeat], slot] = draw[~repeat]
            todo, rounds = todo[repeat], rounds + 1
    return choices


def rank_loads(choices, num_experts, ep):
    """Token-expert assignments each of ``ep`` GPUs serves, experts dealt in contiguous runs of ``E / ep``."""
    e, ranks = check_positive_int("num_experts", num_experts), check_positive_int("ep", ep)
    if e % ranks:
        raise ValueError(f"num_experts ({e}) must be divisible by ep ({ranks}): each GPU holds E / ep experts")
    per_expert = np.bincount(np.asarray(choices, dtype=np.intp).ravel(), minlength=e)  # (E,)
    return per_expert.reshape(ranks, e // ranks).sum(axis=1)  # (ep,)


def expert_all_to_all_bytes(num_tokens, d_model, top_k, ep, fmt="bf16") -> float:
    """Expected bytes each of ``ep`` GPUs sends per MoE layer: its tokens to their experts, and back.

    The ``num_tokens`` of a step are spread evenly, ``n / ep`` a GPU; each goes to ``top_k``
    experts, of which ``(ep - 1) / ep`` live on other GPUs (uniform routing), as one ``d``-vector
    each way. An upper bound: kernels such as DeepEP send a token once to a GPU that holds several
    of its experts.
    """
    n, d = check_positive_int("num_tokens", num_tokens), check_positive_int("d_model", d_model)
    k, ranks = check_positive_int("top_k", top_k), check_positive_int("ep", ep)
    if n % ranks:
        raise ValueError(f"num_tokens ({n}) must be divisible by ep ({ranks}): each GPU sends its own tokens")
    remote = (n // ranks) * k * (ranks - 1)  # ep times the expected vectors leaving one GPU each way
    return 2 * elements_to_bytes(remote * d, fmt) / ranks


def _check_loads(load):
    w = np.asarray(load, dtype=float)
    if w.ndim != 1 or w.size == 0 or not np.all(w >= 0):
        raise ValueError(f"load must be a 1-D array of non-negative numbers, got shape {w.shape}")
    return w


def eplb_replicate(load, num_physical):
    """Replicas of each expert, ``(E,)`` ints summing to ``num_physical``: EPLB's ``replicate_experts``.

    Each of the ``num_physical - E`` redundant slots goes, one at a time, to the expert whose load
    per replica, ``load / replicas``, is the highest (deepseek-ai/EPLB, ``eplb.py``), which
    minimises the largest load any one replica carries. ``load`` is per expert, e.g. tokens routed
    to it over a recent window.
    """
    w = _check_loads(load)  # (E,)
    n = _check_count("num_physical", num_physical, 1)
    if n < w.size:
        raise ValueError(f"num_physical ({n}) must be at least the number of experts ({w.size}): every expert "
                         "needs one replica")
    count = np.ones(w.size, dtype=np.intp)
    for _ in range(n - w.size):
        count[np.argmax(w / count)] += 1  # first of equals, as torch's max
    return count


def eplb_pack(weights, num_packs):
    """Pack of each item, ``(n,)`` ints: EPLB's ``balanced_packing``, ``n / num_packs`` items a pack.

    Items in order of falling weight each go to the lightest pack that still has room, a greedy
    longest-processing-time rule (deepseek-ai/EPLB, ``eplb.py``).
    """
    w = _check_loads(weights)  # (n,)
    m = _check_count("num_packs", num_packs, 1)
    if w.size % m:
        raise ValueError(f"the number of items ({w.size}) must be divisible by num_packs ({m}): each pack "
                         "(GPU) holds the same number of experts")
    per_pack, pack = w.size // m, np.full(w.size, -1, dtype=np.intp)
    totals, items = np.zeros(m), np.zeros(m, dtype=np.intp)
    for i in np.argsort(-w, kind="stable"):
        open_packs = np.flatnonzero(items < per_pack)
        j = open_packs[np.argmin(totals[open_packs])]
        pack[i], totals[j], items[j] = j, totals[j] + w[i], items[j] + 1
    return pack


def eplb_gpu_loads(load, num_physical, num_gpus):
    """Load on each GPU, ``(num_gpus,)``, after EPLB's global policy: replicate, then pack.

    A replicated expert's load is split evenly over its replicas (the router spreads its tokens),
    each replica is one physical slot, and the slots are packed ``num_physical / num_gpus`` to a
    GPU by :func:`eplb_pack`. EPLB uses this policy when the nodes do not divide the expert groups,
    e.g. for decoding at large expert parallelism (``rebalance_experts``).
    """
    w = _check_loads(load)  # (E,)
    count = eplb_replicate(w, num_physical)  # (E,)
    replica_load = np.repeat(w / count, count)  # (num_physical,)
    pack = eplb_pack(replica_load, num_gpus)  # (num_physical,)
    return np.bincount(pack, weights=replica_load, minlength=num_gpus)  # (num_gpus,)


def capacity_dropped_fraction(choices, num_experts, capacity_factor) -> float:
    """Share of token-expert assignments dropped when each expert takes at most its capacity.

    Switch Transformer's rule (Fedus et al., arXiv:2101.03961 sec. 2.2): expert capacity =
    ``capacity_factor * n * k / E`` slots (rounded down) for ``n`` tokens routed to ``k`` experts
    each; assignments past it are dropped, the token passing on through the residual connection.
    Dropless kernels (MegaBlocks; vLLM's fused MoE) drop nothing: the answer for them is 0.

    Parameters
    ----------
    choices : array of int, shape (n, k)
        Each token's experts, e.g. from :func:`route_tokens`.
    num_experts : int
    capacity_factor : float
        Positive; 1.0 gives each expert exactly its even share.
    """
    e = _check_count("num_experts", num_experts, 1)
    if isinstance(capacity_factor, bool) or not isinstance(capacity_factor, numbers.Real) or not capacity_factor > 0:
        raise ValueError(f"capacity_factor must be a positive number, got {capacity_factor!r}")
    c = np.asarray(choices, dtype=np.intp)
    if c.ndim != 2 or c.size == 0 or c.min() < 0 or c.max() >= e:
        raise ValueError(f"choices must be an (n, k) array of expert indices in [0, {e}), got shape {c.shape}")
    capacity = int(capacity_factor * c.size / e)
    per_expert = np.bincount(c.ravel(), minlength=e)  # (E,)
    return float(np.maximum(per_expert - capacity, 0).sum() / c.size)


def ep_ranks_reached(num_experts, top_k, ep) -> float:
    """Expected distinct GPUs one token's ``top_k`` experts live on, ``E / ep`` experts a GPU.

    A GPU is missed when all ``k`` experts, drawn without replacement, avoid its ``E / ep``:
    ``ep * (1 - C(E - E/ep, k) / C(E, k))`` under uniform routing. DeepSeek-V3 (256 experts,
    top 8) on 32 GPUs reaches about 7.2 of them; a kernel that sends a token once per GPU (DeepEP's
    normal kernels) moves that many copies, one that sends once per expert (its low-latency
    kernels) moves ``k``.
    """
    e, k, ranks = (_check_count(name, value, 1) for name, value in
                   (("num_experts", num_experts), ("top_k", top_k), ("ep", ep)))
    if e % ranks or k > e:
        raise ValueError(f"num_experts ({e}) must be divisible by ep ({ranks}) and at least top_k ({k})")
    return ranks * (1.0 - math.comb(e - e // ranks, k) / math.comb(e, k))


def ep_peer_bytes(tokens_per_rank, num_experts, top_k, ep, token_bytes, per_expert=False) -> float:
    """Expected bytes one GPU sends to each other GPU in one dispatch (or receives in one combine).

    Each of the ``tokens_per_rank`` tokens goes to a given other GPU once if any of its experts
    lives there (``per_expert=False``, probability :func:`ep_ranks_reached` / ``ep``), or once per
    expert there (``per_expert=True``, ``k / ep`` copies on average), ``token_bytes`` a copy
    (e.g. ``d`` FP8 bytes plus one 4-byte scale per 128 channels for dispatch, ``2 d`` for bf16).
    """
    n, b = _check_count("tokens_per_rank", tokens_per_rank, 0), _check_count("token_bytes", token_bytes, 1)
    reached = ep_ranks_reached(num_experts, top_k, ep)  # validates E, k, ep
    copies = top_k / ep if per_expert else reached / ep
    return n * copies * b


def _smallest_k(key, k):
    """``np.argsort(key, axis=1, kind="stable")[:, :k]`` as intp: k passes of argmin, not a full sort.

    ``argmin`` returns the first of equal keys, as a stable sort orders them; a taken key is set
    to ``inf`` (in place: ``key`` is overwritten), so keys that are not all finite take the sort.
    """
    if not np.all(np.isfinite(key)):
        return np.argsort(key, axis=1, kind="stable")[:, :k].astype(np.intp)
    rows = np.arange(key.shape[0])  # (n,)
    choices = np.empty((key.shape[0], k), dtype=np.intp)  # (n, k)
    for j in range(k):
        choices[:, j] = np.argmin(key, axis=1)
        key[rows, choices[:, j]] = np.inf
    return choices


def biased_topk(scores, bias, top_k):
    """DeepSeek-V3's auxiliary-loss-free routing: experts chosen by ``scores + bias``, weighted by ``scores``.

    The bias only selects: the ``top_k`` experts of ``s + b`` are each token's experts, and their
    gating weights are the raw affinities ``s`` normalised over the chosen ones (arXiv:2412.19437
    sec. 2.1.2).

    Parameters
    ----------
    scores : array, shape (n, E)
        Non-negative affinities (sigmoid outputs in DeepSeek-V3).
    bias : array, shape (E,)
    top_k : int

    Returns
    -------
    choices : intp array, shape (n, k)
    weights : float array, shape (n, k), each row summing to 1
    """
    s, b = np.asarray(scores, dtype=float), np.asarray(bias, dtype=float)
    if s.ndim != 2 or b.shape != (s.shape[1],) or not np.all(s >= 0):
        raise ValueError(f"scores must be (n, E) non-negative and bias (E,), got {s.shape} and {b.shape}")
    k = _check_count("top_k", top_k, 1)
    if k > s.shape[1]:
        raise ValueError(f"top_k ({k}) must not exceed num_experts ({s.shape[1]})")
    choices = _smallest_k(-(s + b), k)  # (n, k)
    g = np.take_along_axis(s, choices, axis=1)  # (n, k): raw affinities, no bias
    return choices, g / g.sum(axis=1, keepdims=True)


def bias_update(bias, load, gamma):
    """One step of DeepSeek-V3's bias update: ``b_i - gamma`` if expert ``i`` is overloaded, ``+ gamma`` if under.

    Over- and under-loaded against the mean load of the step (arXiv:2412.19437 sec. 2.1.2; the
    paper used ``gamma = 0.001``, sec. 4.2): ``b - gamma * sign(load - mean(load))``.
    """
    b, w = np.asarray(bias, dtype=float), _check_loads(load)
    if b.shape != w.shape:
        raise ValueError(f"bias and load must have the same shape (E,), got {b.shape} and {w.shape}")
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not gamma > 0:
        raise ValueError(f"gamma must be a positive number, got {gamma!r}")
    return b - gamma * np.sign(w - w.mean())
