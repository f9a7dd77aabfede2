"""Owned replicas under a daily load curve, with the overflow sent to an API.

Stack the owned replicas from the bottom of the load: replica ``k`` (from 1) serves the part of the
demand between ``(k - 1) C`` and ``k C``, where ``C`` is what one replica serves within its SLO. Its
utilisation over the day is its share of that band; the higher a replica sits, the fewer hours it
is busy. An owned replica costs the same busy or idle, and every token above the owned capacity is
bought from an API, so the ``k``-th replica pays while its utilisation exceeds the ratio of the
self-hosted cost per token at full use to the API's price per token.

>>> import numpy as np, mha_kit as mk
>>> mk.stacked_replica_utilisation(np.array([1.0, 3.0]), 1.0, 3).tolist()
[1.0, 0.5, 0.5]

Book: chapter "Many models, adapters and tenants".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int, check_positive_number


def _check_demand(demand):
    rule = "demand must be a non-empty 1-D array of finite rates >= 0"
    try:
        d = np.asarray(demand, dtype=np.float64)  # (T,) tokens/s in each of T equal periods
    except (TypeError, ValueError):
        raise ValueError(f"{rule}, got {demand!r}, which is not numeric") from None
    if d.ndim != 1 or d.size == 0 or not np.all(np.isfinite(d)) or np.any(d < 0):
        low, high = (float(np.min(d)), float(np.max(d))) if d.size else (None, None)
        raise ValueError(f"{rule}, got shape {d.shape} with min {low} and max {high}")
    return d


def stacked_replica_utilisation(demand, replica_capacity, replicas) -> np.ndarray:
    """Utilisation of each of ``replicas`` owned replicas stacked from the bottom of ``demand``.

    ``demand`` has shape (T,): tokens/s in each of T equal periods; ``replica_capacity`` is the rate one
    replica serves within its SLO. Returns shape (replicas,): replica ``k`` (0-based) serves
    ``clip(demand - k C, 0, C)`` and its utilisation is the mean of that over ``C``.

    Book: chapter "Many models, adapters and tenants".
    """
    d = _check_demand(demand)
    cap = check_positive_number("replica_capacity", replica_capacity)
    n = check_positive_int("replicas", replicas)
    floors = cap * np.arange(n)[:, None]  # (replicas, 1): the bottom of each replica's band
    return np.clip(d[None, :] - floors, 0.0, cap).mean(axis=1) / cap  # (replicas, T) -> (replicas,)


def owned_plus_api_cost(demand, replica_capacity, replicas, replica_cost_per_hour, api_price_per_million,
                        hours_per_period=1.0) -> float:
    """Dollars for the whole ``demand`` curve: ``replicas`` owned all the time, the overflow bought per token.

    Owned: ``replicas * replica_cost_per_hour * T * hours_per_period``, busy or not. API:
    ``sum(max(demand - replicas * C, 0)) * 3600 * hours_per_period * api_price_per_million / 1e6``.
    ``replicas`` may be 0 (everything on the API).

    Book: chapter "Many models, adapters and tenants".
    """
    d = _check_demand(demand)
    cap = check_positive_number("replica_capacity", replica_capacity)
    if isinstance(replicas, bool) or not isinstance(replicas, (int, np.integer)) or replicas < 0:
        raise ValueError(f"replicas must be an integer >= 0, got {replicas!r}")
    price = check_positive_number("replica_cost_per_hour", replica_cost_per_hour)
    api = check_positive_number("api_price_per_million", api_price_per_million)
    hours = check_positive_number("hours_per_period", hours_per_period)
    overflow_tokens = np.maximum(d - replicas * cap, 0.0).sum() * 3600 * hours
    return float(replicas * price * d.size * hours + overflow_tokens * api / 1e6)
