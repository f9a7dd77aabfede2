"""Serving against latency targets: workloads, percentiles, SLO attainment and goodput.

Latencies come from :func:`mha_kit.simulate_batching` (one :class:`mha_kit.RequestLatency` per
request). A request meets its service-level objectives (SLOs) when its time to first token (TTFT)
is at most ``ttft_slo`` and its time per output token (TPOT) at most ``tpot_slo``. DistServe
(Zhong et al. 2024, sec. 2) calls the fraction of requests that meet both the SLO attainment, and
the goodput the largest request rate a system serves while the attainment stays at a target such
as 90%.

Book: chapter "Serving in production: metrics, latency and engines".
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .config import check_positive_int
from .scheduling import RequestLatency


def _check_latencies(latencies):
    latencies = list(latencies)
    if not latencies or not all(isinstance(r, RequestLatency) for r in latencies):
        raise ValueError("latencies must be a non-empty sequence of RequestLatency (from mk.simulate_batching)")
    return latencies


def poisson_requests(rate, n, prompt_tokens, output_tokens, seed=0):
    """``n`` requests arriving as a Poisson process of ``rate`` per second, for :func:`simulate_batching`.

    Parameters
    ----------
    rate : float
        Mean arrivals per second.
    n : int
    prompt_tokens, output_tokens : int or sequence of int
        A fixed length, or lengths drawn uniformly from the sequence (repeat a value to weight it).
    seed : int

    Returns
    -------
    list of (arrival_s, prompt_tokens, output_tokens), arrivals rounded to 0.1 ms.

    Book: chapter "Serving in production: metrics, latency and engines".
    """
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 < rate < math.inf:
        raise ValueError(f"rate must be a positive number of requests per second, got {rate!r}")
    n = check_positive_int("n", n)
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, size=n)).round(4)
    prompts = rng.choice(np.atleast_1d(prompt_tokens), size=n)
    outputs = rng.choice(np.atleast_1d(output_tokens), size=n)
    return [(float(a), int(p), int(o)) for a, p, o in zip(arrivals, prompts, outputs)]


def latency_percentiles(latencies, percentiles=(50, 90, 99)):
    """Percentiles of TTFT and TPOT over requests, as a dashboard shows them.

    Returns
    -------
    dict
        ``{"ttft": (p50, p90, p99), "tpot": (...)}`` in seconds (numpy's linear interpolation);
        TPOT leaves out requests with a single output token.

    Book: chapter "Serving in production: metrics, latency and engines".
    """
    latencies = _check_latencies(latencies)
    ttft = [r.ttft for r in latencies]
    tpot = [r.tpot for r in latencies if not math.isnan(r.tpot)] or [math.nan]
    return {"ttft": tuple(float(v) for v in np.percentile(ttft, percentiles)),
            "tpot": tuple(float(v) for v in np.percentile(tpot, percentiles))}


def slo_attainment(latencies, ttft_slo, tpot_slo) -> float:
    """Fraction of requests with ``ttft <= ttft_slo`` and ``tpot <= tpot_slo`` (a single token: TTFT only).

    Book: chapter "Serving in production: metrics, latency and engines".
    """
    latencies = _check_latencies(latencies)
    if not (ttft_slo > 0 and tpot_slo > 0):
        raise ValueError(f"ttft_slo and tpot_slo must be positive seconds, got {ttft_slo!r} and {tpot_slo!r}")
    met = [r.ttft <= ttft_slo and (math.isnan(r.tpot) or r.tpot <= tpot_slo) for r in latencies]
    return sum(met) / len(met)


def goodput_rate(rates, attainments, target=0.9):
    """DistServe's goodput: the largest tested rate whose SLO attainment is at least ``target``.

    Parameters
    ----------
    rates, attainments : sequence of float, one length
        Request rates tried and the attainment (:func:`slo_attainment`) measured at each.
    target : float in (0, 1]

    Returns
    -------
    float or None
        ``None`` when no rate reaches the target.

    Book: chapter "Serving in production: metrics, latency and engines".
    """
    rates, attainments = list(rates), list(attainments)
    if not rates or len(rates) != len(attainments):
        raise ValueError(f"rates and attainments must be non-empty and of one length, got {len(rates)} "
                         f"and {len(attainments)}")
    if not 0 < target <= 1:
        raise ValueError(f"target must lie in (0, 1], got {target!r}")
    ok = [r for r, a in zip(rates, attainments) if a >= target]
    return max(ok) if ok else None
