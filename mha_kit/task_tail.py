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

import math
import numbers
import statistics

import numpy as np

from .config import check_positive_int, check_positive_number

_Z99 = statistics.NormalDist().inv_cdf(0.99)  # the standard normal's 0.99 quantile, 2.326


def _check_probability(name, value, low_open):
    """``value`` as a float in [0, 1] (or (0, 1] if ``low_open``); else ``ValueError`` naming ``name``."""
    inside = isinstance(value, numbers.Real) and (0 < value <= 1 if low_open else 0 <= value <= 1)
    if isinstance(value, bool) or not inside:
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise ValueError(f"{name} must be a probability in {interval}, got {value!r}")
    return float(value)


def any_call_slow(calls, p_slow) -> float:
    """Probability that at least one of ``calls`` independent calls is slow: ``1 - (1 - p_slow)^calls``.

    ``p_slow`` is the chance that one call exceeds its latency threshold (0.01 for "beyond its p99");
    0 and 1 are allowed and give 0 and 1.

    Book: chapter "Overload, failures and rollouts".
    """
    n = check_positive_int("calls", calls)
    p = _check_probability("p_slow", p_slow, low_open=False)
    return 1.0 - (1.0 - p) ** n


def per_call_quantile(calls, task_target) -> float:
    """Quantile each of ``calls`` independent calls must meet so all meet it with ``task_target``.

    ``task_target ** (1 / calls)``: a task of 20 calls that must finish within its budget 95% of the time,
    with the budget split into per-call deadlines, needs each call within its deadline 99.74% of the time.
    Meeting every deadline is sufficient for the task, not necessary (a fast call can cover a slow one),
    so the target is conservative. ``task_target`` is in (0, 1]: a target of 1 asks every call for 1.

    Book: chapter "Overload, failures and rollouts".
    """
    n = check_positive_int("calls", calls)
    t = _check_probability("task_target", task_target, low_open=True)
    return t ** (1.0 / n)


def lognormal_call_times(calls, call_median, call_p99, tasks, seed=0) -> np.ndarray:
    """Seeded sample of ``tasks`` tasks of ``calls`` independent lognormal call latencies.

    Each call has median ``call_median`` and 99th percentile ``call_p99`` (same unit, ``call_p99 >
    call_median``): ``call_median * exp(sigma * Z)`` with ``Z`` standard normal and ``sigma =
    ln(call_p99 / call_median) / z_0.99``. Returns shape (tasks, calls); a task's time is a row's sum.

    Book: chapter "Overload, failures and rollouts".
    """
    n = check_positive_int("calls", calls)
    m = check_positive_int("tasks", tasks)
    median = check_positive_number("call_median", call_median)
    p99 = check_positive_number("call_p99", call_p99)
    if p99 <= median:
        raise ValueError(f"call_p99 must exceed call_median, got call_p99={call_p99!r} <= call_median={call_median!r}")
    sigma = math.log(p99 / median) / _Z99
    z = np.random.default_rng(seed).standard_normal((m, n))  # (tasks, calls)
    return median * np.exp(sigma * z)
