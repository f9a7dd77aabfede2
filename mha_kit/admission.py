"""Admission control: how many requests may wait before the time-to-first-token target breaks.

A request that joins the queue waits for the prefills ahead of it, then runs its own. With a TTFT
target, fixed stages that do not queue (retrieval, tokenisation, network) and a known prefill time
per request, the target fixes how many requests may be ahead of a new one.

>>> import mha_kit as mk
>>> mk.admission_queue_depth(0.800, 0.280, 0.160)  # 800 ms target, 220 + 60 ms fixed, 160 ms prefill
2

Book: chapter "Overload, failures and rollouts", section on sizing the admission queue.
"""
from __future__ import annotations

import math
import numbers

from .config import check_positive_int, check_positive_number


def admission_queue_depth(ttft_slo, fixed, prefill, replicas=1) -> int:
    """Largest queue depth at which a newly admitted request still meets its TTFT target.

    The wait a request may spend in the queue is ``ttft_slo - fixed - prefill`` (its own prefill
    runs after the wait). Each request ahead of it holds ``prefill`` seconds of prefill work, which
    ``replicas`` replicas behind one queue clear in parallel, so the depth is
    ``floor(replicas * (ttft_slo - fixed - prefill) / prefill)``. An upper bound, not a forecast:
    decode steps that share the GPU with the prefills, chunked prefill (which spreads a request's
    own prefill over several steps) and the prefill already in service when a request arrives
    (worst case: one request fewer) only lower it.

    Parameters
    ----------
    ttft_slo : float
        Time-to-first-token target in seconds (> 0).
    fixed : float
        Seconds of the target spent outside the engine queue (retrieval, tokenisation, network), >= 0.
    prefill : float
        Prefill time of one request on one replica, in seconds (> 0).
    replicas : int
        Replicas that serve the one queue (>= 1).

    Returns
    -------
    int
        Requests that may wait ahead of a new one; 0 when the slack is shorter than one prefill.

    Raises
    ------
    ValueError
        If a value is out of range, or the target cannot hold the fixed stages plus one prefill
        (``fixed + prefill > ttft_slo``): then no queue depth meets it.
    """
    ttft_slo = check_positive_number("ttft_slo", ttft_slo)
    prefill = check_positive_number("prefill", prefill)
    replicas = check_positive_int("replicas", replicas)
    if isinstance(fixed, bool) or not isinstance(fixed, numbers.Real) or not 0 <= fixed < math.inf:
        raise ValueError(f"fixed (seconds outside the queue) must be a finite number >= 0, got {fixed!r}")
    slack = ttft_slo - float(fixed) - prefill  # seconds a request may wait in the queue
    if slack < 0:
        raise ValueError(f"the TTFT target must hold the fixed stages plus one prefill: fixed + prefill = "
                         f"{float(fixed) + prefill!r} s > ttft_slo = {ttft_slo!r} s")
    return math.floor(replicas * slack / prefill + 1e-9)  # 1e-9: a slack of exactly k prefills gives k
