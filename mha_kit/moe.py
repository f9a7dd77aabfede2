"""Mixture-of-experts routing: how many experts a step's tokens reach.

A routed MoE layer sends each token to its ``top_k`` highest-scoring experts out of
``num_experts``. A decode step of one token reads ``top_k`` experts' weights; a step that scores
several tokens of one sequence at once (speculative verification, a prefill chunk) reads every
expert that any of them picked. Under uniform routing each token picks a given expert with
probability ``top_k / num_experts``, independently of the other tokens, so the expected number of
distinct experts reached is ``num_experts * (1 - (1 - top_k / num_experts) ** num_tokens)``.
Real routers are not uniform, so this is the model's figure, not a measurement.

Book: chapters "Speculative decoding and the KV cache" and "Continuous batching".
"""
from __future__ import annotations

import numbers


def _check_count(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def experts_touched(num_tokens, num_experts, top_k) -> float:
    """Expected distinct routed experts that ``num_tokens`` tokens reach, under uniform routing.

    Each token picks ``top_k`` of ``num_experts`` experts; a given expert is missed by one token with
    probability ``1 - top_k / num_experts`` and by all of them with that to the power ``num_tokens``.

    Parameters
    ----------
    num_tokens : int
        Tokens routed together in one step (>= 0): 1 for a decode step, ``k + 1`` to verify ``k`` drafts.
    num_experts : int
        Routed experts per MoE layer (shared experts, read by every token, are not counted).
    top_k : int
        Experts each token is sent to, ``1 <= top_k <= num_experts``.

    Returns
    -------
    float
        ``num_experts * (1 - (1 - top_k / num_experts) ** num_tokens)``: ``top_k`` for one token,
        approaching ``num_experts`` as the tokens grow.

    Book: chapter "Speculative decoding and the KV cache".
    """
    num_tokens = _check_count("num_tokens", num_tokens, 0)
    num_experts = _check_count("num_experts", num_experts, 1)
    top_k = _check_count("top_k", top_k, 1)
    if top_k > num_experts:
        raise ValueError(f"top_k ({top_k}) must not exceed num_experts ({num_experts})")
    return num_experts * (1 - (1 - top_k / num_experts) ** num_tokens)
