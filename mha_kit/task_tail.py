"""Calls in series: how a per-call tail becomes a task's typical case, and the per-call target a task needs.

An agent task (or any request that makes ``n`` dependent calls one after another) is slow when any of
its calls is slow. With each call slow independently with probability ``p``, the task meets at least
one slow call with probability ``1 - (1 - p)^n``: the arithmetic of Dean and Barroso's fan-out, which
holds for calls in series as for shards in parallel. Inverting it gives the per-call quantile a task
target needs: if every call must meet its own deadline, ``q^n >= target`` asks for ``q = target^(1/n)``.

>>> import mha_kit as mk
>>> round(mk.any_call_slow(20, 0.01), 3)  # 20 calls, each beyond its p99 one time in a hundred
0.182

Book: chapter "Overload, failures and rollouts".
"""
from __future__ import annotations

import numbers

from .config import check_positive_int


def _check_open_probability(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be a probability strictly between 0 and 1, got {value!r}")
    return float(value)


def any_call_slow(calls, p_slow) -> float:
    """Probability that at least one of ``calls`` independent calls is slow: ``1 - (1 - p_slow)^calls``.

    ``p_slow`` is the chance that one call exceeds its latency threshold (0.01 for "beyond its p99").

    Book: chapter "Overload, failures and rollouts".
    """
    n = check_positive_int("calls", calls)
    p = _check_open_probability("p_slow", p_slow)
    return 1.0 - (1.0 - p) ** n


def per_call_quantile(calls, task_target) -> float:
    """Quantile each of ``calls`` independent calls must meet so all meet it with ``task_target``.

    ``task_target ** (1 / calls)``: a task of 20 calls that must finish within its budget 95% of the time,
    with the budget split into per-call deadlines, needs each call within its deadline 99.74% of the time.
    Meeting every deadline is sufficient for the task, not necessary (a fast call can cover a slow one),
    so the target is conservative.

    Book: chapter "Overload, failures and rollouts".
    """
    n = check_positive_int("calls", calls)
    t = _check_open_probability("task_target", task_target)
    return t ** (1.0 / n)
