"""The router of a mixture-of-experts layer, and the losses that train it to balance.

A router is one linear map per MoE layer, ``W_r`` of shape ``(E, d)``: each token's ``E`` logits
``x W_r^T`` become scores, the ``k`` best experts are chosen, and their outputs are summed with
the gating weights ``g``: ``y = sum_i g_i FFN_i(x)``. Shipped models differ in three places:

* :func:`topk_gates`: softmax over all ``E`` experts then the top ``k`` (Switch, GShard, Qwen-MoE),
  renormalised over the ``k`` or not (Qwen-MoE's ``norm_topk_prob``); Mixtral's ``Softmax(TopK(logits))``
  equals the renormalised form, because renormalising a softmax over a subset is the softmax of
  that subset's logits;
* :func:`grouped_topk_gates`: DeepSeek-V3's sigmoid scores, a bias for selection only, the top
  groups of experts first (a node each), weights renormalised and scaled;
* :func:`load_balance_loss` and :func:`router_z_loss`: the auxiliary losses (Switch Transformer,
  ST-MoE, DeepSeek-V3's sequence-wise variant).

Book: chapter "Mixture-of-experts serving", sections "The router, step by step" and "The
auxiliary load-balancing loss".
"""
from __future__ import annotations

import numpy as np

from .attention import softmax
from .config import check_positive_int


def _logits(logits, top_k):
    x = np.asarray(logits, dtype=float)
    if x.ndim != 2 or x.shape[1] == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"logits must be a finite (n, E) array, got shape {x.shape}")
    k = check_positive_int("top_k", top_k)
    if k > x.shape[1]:
        raise ValueError(f"top_k ({k}) must not exceed the number of experts ({x.shape[1]})")
    return x, k


def topk_gates(logits, top_k, renormalize=True):
    """Softmax router: each token's ``top_k`` experts and their gating weights.

    ``p = softmax(logits)`` over all ``E`` experts; the ``k`` largest are chosen (ties to the lower
    index); their weights are ``p`` itself (``renormalize=False``: Switch, DeepSeek-V2; summing to
    less than 1) or ``p`` divided by its sum over the ``k`` (``renormalize=True``: Mixtral; the
    Qwen-MoE routers pick between the two with their config's ``norm_topk_prob``).

    Parameters
    ----------
    logits : array, shape (n, E)
    top_k : int
    renormalize : bool

    Returns
    -------
    choices : intp array, shape (n, k), best first
    weights : float array, shape (n, k)
    """
    x, k = _logits(logits, top_k)
    p = softmax(x)  # (n, E)
    choices = np.argsort(-p, axis=1, kind="stable")[:, :k].astype(np.intp)  # (n, k)
    g = np.take_along_axis(p, choices, axis=1)  # (n, k)
    return choices, (g / g.sum(axis=1, keepdims=True) if renormalize else g)


def grouped_topk_gates(logits, bias, top_k, num_groups, topk_groups, route_scale):
    """DeepSeek-V3's router (``Gate.forward`` in deepseek-ai/DeepSeek-V3 ``inference/model.py``).

    ``s = sigmoid(logits)``; the experts are split into ``num_groups`` contiguous groups (one per
    node) and a group scores the sum of its two best ``s + bias``; only the ``topk_groups`` best
    groups stay eligible, and the ``top_k`` best ``s + bias`` among them are chosen. The weights
    are the chosen *unbiased* ``s``, divided by their sum, times ``route_scale`` (2.5 for V3).

    Parameters
    ----------
    logits : array, shape (n, E)
    bias : array, shape (E,)
    top_k, num_groups, topk_groups : int
        ``E`` divisible by ``num_groups``, ``top_k <= topk_groups * E / num_groups``.
    route_scale : float

    Returns
    -------
    choices : intp array, shape (n, k); weights : float array, shape (n, k), rows summing to ``route_scale``
    """
    x, k = _logits(logits, top_k)
    n, e = x.shape
    gr, tg = check_positive_int("num_groups", num_groups), check_positive_int("topk_groups", topk_groups)
    b = np.asarray(bias, dtype=float)
    if b.shape != (e,) or e % gr or tg > gr or k > tg * (e // gr) or e // gr < 2:
        raise ValueError(f"need bias of shape ({e},), E ({e}) divisible by num_groups ({gr}) into groups of >= 2, "
                         f"topk_groups ({tg}) <= num_groups and top_k ({k}) <= topk_groups * E / num_groups")
    s = 1.0 / (1.0 + np.exp(-x))  # (n, E) affinities
    biased = (s + b).reshape(n, gr, e // gr)  # (n, groups, E / groups)
    group_score = np.sort(biased, axis=2)[:, :, -2:].sum(axis=2)  # (n, groups): sum of the two best
    keep = np.argsort(-group_score, axis=1, kind="stable")[:, :tg]  # (n, topk_groups)
    masked = np.full_like(biased, -np.inf)
    rows = np.arange(n)[:, None]
    masked[rows, keep] = biased[rows, keep]
    choices = np.argsort(-masked.reshape(n, e), axis=1, kind="stable")[:, :k].astype(np.intp)  # (n, k)
    g = np.take_along_axis(s, choices, axis=1)  # (n, k): the bias chooses, never weighs
    return choices, float(route_scale) * g / g.sum(axis=1, keepdims=True)


def load_balance_loss(probs, choices):
    """``E * sum_i f_i P_i``: Switch Transformer's auxiliary loss before its coefficient ``alpha``.

    ``f_i`` is the share of the ``n * k`` token-expert assignments that went to expert ``i`` (a
    count: no gradient flows through it), ``P_i`` the mean router probability of expert ``i``
    (differentiable). Both uniform gives 1, the minimum the router can reach; all tokens on one
    expert that also takes all the probability gives ``E``. DeepSeek-V3's sequence-wise loss is
    this quantity computed over one sequence, with ``P`` from the normalised sigmoid scores.

    Parameters
    ----------
    probs : array, shape (n, E), rows summing to 1
    choices : int array, shape (n, k)
    """
    p, c = np.asarray(probs, dtype=float), np.asarray(choices)
    if p.ndim != 2 or c.ndim != 2 or c.shape[0] != p.shape[0] or c.size == 0 or c.min() < 0 or c.max() >= p.shape[1]:
        raise ValueError(f"probs must be (n, E) and choices (n, k) indices below E, got {p.shape} and {c.shape}")
    if not np.allclose(p.sum(axis=1), 1.0):
        raise ValueError("each row of probs must sum to 1 (a softmax over the experts, or normalised scores)")
    e = p.shape[1]
    f = np.bincount(c.astype(np.intp).ravel(), minlength=e) / c.size  # (E,) share of assignments
    return float(e * np.dot(f, p.mean(axis=0)))


def router_z_loss(logits):
    """ST-MoE's router z-loss: the mean over tokens of ``logsumexp(logits) ** 2`` (before ``c_z``).

    It pushes the router's logits towards small magnitudes, so that the exponentials of the
    softmax stay in range in low precision (Zoph et al., arXiv:2202.08906 sec. 3.1).
    """
    x, _ = _logits(logits, 1)
    m = x.max(axis=1)  # (n,)
    lse = m + np.log(np.exp(x - m[:, None]).sum(axis=1))  # (n,)
    return float(np.mean(lse ** 2))

