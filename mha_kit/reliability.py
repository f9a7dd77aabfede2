"""Queueing and availability: why latency collapses near full load, and how many replicas survive failures.

Waiting times are in units of the mean service time, so one formula serves a replica that finishes a
request in 50 ms and one that takes 5 s. ``rho`` is the utilisation of one server: arrival rate over
service rate (over ``servers`` times the service rate for a pool).

>>> import mha_kit as mk
>>> mk.mm1_wait(0.8)  # an M/M/1 queue at 80% load: the wait is 4 service times
4.000000000000001

Book: chapter "Overload, failures and rollouts".
"""
from __future__ import annotations

import math
import numbers

from .config import check_positive_int


def _check_rho(rho):
    if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not 0 <= rho < 1:
        raise ValueError(f"utilisation rho must satisfy 0 <= rho < 1 (the queue grows without bound at "
                         f"rho >= 1), got {rho!r}")
    return float(rho)


def _check_scv(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
        raise ValueError(f"{name} (a squared coefficient of variation) must be a finite number >= 0, got {value!r}")
    return float(value)


def mm1_wait(rho) -> float:
    """Mean time in the queue of an M/M/1 server, in mean service times: ``rho / (1 - rho)``.

    Poisson arrivals, exponential service, one server, first come first served
    (Harchol-Balter 2013, ch. 14). The time in system is one service time more.

    Book: chapter "Overload, failures and rollouts".
    """
    rho = _check_rho(rho)
    return rho / (1 - rho)


def kingman_wait(rho, ca2=1.0, cs2=1.0) -> float:
    """Kingman's approximation of the mean queueing time of a G/G/1 server, in mean service times.

    ``rho / (1 - rho) * (ca2 + cs2) / 2``, with ``ca2`` and ``cs2`` the squared coefficients of
    variation of the gaps between arrivals and of the service times (Kingman 1961). Exact for
    Poisson arrivals (``ca2 = 1``: the Pollaczek-Khinchine mean), so ``cs2 = 1`` gives
    :func:`mm1_wait` and ``cs2 = 0`` (every request takes as long) half of it.

    Book: chapter "Overload, failures and rollouts".
    """
    rho = _check_rho(rho)
    return rho / (1 - rho) * (_check_scv("ca2", ca2) + _check_scv("cs2", cs2)) / 2


def erlang_c(servers, rho) -> float:
    """Probability that an arrival waits in an M/M/c queue with ``servers`` servers at utilisation ``rho``.

    The Erlang-C formula (Harchol-Balter 2013, ch. 15), with offered load ``a = servers * rho``:
    ``(a^c / c!) / (1 - rho)`` over ``sum_{k<c} a^k / k! + (a^c / c!) / (1 - rho)``. The terms are
    built by ratios, so a few hundred servers do not overflow.

    Book: chapter "Overload, failures and rollouts".
    """
    c, rho = check_positive_int("servers", servers), _check_rho(rho)
    a, term, total = c * rho, 1.0, 0.0
    for k in range(c):  # term = a^k / k!
        total += term
        term *= a / (k + 1)
    tail = term / (1 - rho)  # (a^c / c!) / (1 - rho)
    return tail / (total + tail)


def mmc_wait(servers, rho, cs2=1.0) -> float:
    """Mean queueing time of ``servers`` pooled servers at utilisation ``rho``, in mean service times.

    The M/M/c mean ``erlang_c / (servers * (1 - rho))`` (Harchol-Balter 2013, ch. 15), scaled by
    ``(1 + cs2) / 2`` for service times of squared coefficient of variation ``cs2``: exact for
    ``cs2 = 1``, the usual two-moment approximation otherwise (``cs2 = 0``: M/D/c). With one server
    it is :func:`kingman_wait` with Poisson arrivals.

    Book: chapter "Overload, failures and rollouts".
    """
    c = check_positive_int("servers", servers)
    return erlang_c(c, rho) / (c * (1 - rho)) * (1 + _check_scv("cs2", cs2)) / 2


def _check_probability(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be a probability strictly between 0 and 1, got {value!r}")
    return float(value)


def k_of_n_availability(n, k, availability) -> float:
    """Probability that at least ``k`` of ``n`` independent replicas are up, each up with ``availability``.

    ``sum_{i >= k} C(n, i) a^i (1 - a)^(n - i)``: the fleet meets its load while ``k`` replicas serve it.

    Book: chapter "Overload, failures and rollouts".
    """
    n, k = check_positive_int("n", n), check_positive_int("k", k)
    if k > n:
        raise ValueError(f"k ({k}) replicas needed cannot exceed the n ({n}) replicas deployed")
    a = _check_probability("availability", availability)
    return sum(math.comb(n, i) * a**i * (1 - a) ** (n - i) for i in range(k, n + 1))


def replicas_for_availability(needed, availability, target) -> int:
    """Fewest replicas ``n`` such that at least ``needed`` are up with probability ``target`` or more.

    Each replica is up with ``availability``, independently (a shared failure, a bad release or a lost
    rack, breaks that assumption). Uses :func:`k_of_n_availability`.

    Book: chapter "Overload, failures and rollouts".
    """
    k = check_positive_int("needed", needed)
    a, goal = _check_probability("availability", availability), _check_probability("target", target)
    n = k
    while k_of_n_availability(n, k, a) < goal:
        n += 1
    return n


def _check_nonneg(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def drain_seconds(max_new_tokens, tpot_s, ttft_s=0.0) -> float:
    """Longest time a request admitted just before shutdown needs to finish: ``ttft + max_new_tokens * tpot``.

    A replica that stops admitting at SIGTERM must keep serving for this long to finish every request it
    already holds (the longest generation bounds the drain), so the engine's shutdown timeout and the
    pod's grace period must cover it.

    Book: chapter "Overload, failures and rollouts".
    """
    n = check_positive_int("max_new_tokens", max_new_tokens)
    return _check_nonneg("ttft_s", ttft_s) + n * _check_nonneg("tpot_s", tpot_s)


def offload_token_seconds(gpu_bytes, gpu_bandwidth, offloaded_bytes, offload_bandwidth, overlap=False) -> float:
    """Decode-step floor when part of the weights lives off the GPU (batch 1, memory-bound).

    The GPU reads its ``gpu_bytes`` at ``gpu_bandwidth``; the rest, ``offloaded_bytes``, is either read by
    the CPU from its DRAM (layers run on the CPU, llama.cpp ``-ngl``) or copied over PCIe into the GPU
    each step (vLLM ``--cpu-offload-gb``), at ``offload_bandwidth`` bytes/s. In sequence the times add;
    with the copy prefetched under the GPU's compute (``overlap=True``) the step takes the longer of the two.

    Book: chapter "Overload, failures and rollouts".
    """
    gpu_t = _check_nonneg("gpu_bytes", gpu_bytes) / _check_rate("gpu_bandwidth", gpu_bandwidth)
    off_t = _check_nonneg("offloaded_bytes", offloaded_bytes) / _check_rate("offload_bandwidth", offload_bandwidth)
    return max(gpu_t, off_t) if overlap else gpu_t + off_t


def _check_rate(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < math.inf:
        raise ValueError(f"{name} (bytes/s) must be a finite number > 0, got {value!r}")
    return float(value)
