"""Lower bounds and list scheduling for a VLIW machine with several engines.

A VLIW core issues one bundle a cycle; each engine ``e`` executes at most ``slot_limits[e]``
operations of the bundle. Results land at the end of the cycle, so an operation can read a value
only in a later cycle than the one that wrote it (latency one cycle). This is the machine model of
Anthropic's performance take-home (``problem.py``: ``SLOT_LIMITS``, ``Machine``).
"""

import math

import numpy as np

from .config import check_positive_int


def engine_cycle_bound(op_counts, slot_limits, span=0):
    """Cycles no schedule can beat: ``max(max_e ceil(W_e / s_e), span)``.

    op_counts: mapping engine -> operations that must run on it (W_e); slot_limits: engine ->
    slots per cycle (s_e); span: the longest chain of dependent operations, in cycles.
    Returns ``(bound, engine)``, the engine that sets the bound or ``"span"``.
    """
    bound, binding = int(span), "span"
    for engine, work in op_counts.items():
        if engine not in slot_limits:
            raise ValueError(f"every engine needs a slot limit; {engine!r} has none in {sorted(slot_limits)}")
        cycles = math.ceil(work / check_positive_int(f"slot_limits[{engine!r}]", slot_limits[engine]))
        if cycles > bound:
            bound, binding = cycles, engine
    return bound, binding


def list_schedule(engines, deps, slot_limits):
    """Pack operations into bundles by list scheduling with critical-path priority.

    engines: length-n sequence, the engine of each operation; deps: (producer, consumer) index
    pairs, the consumer issuing at least one cycle after its producer. Each cycle, among the
    ready operations, those with the longest path to the end go first, up to each engine's slots.
    Returns an int array of shape (n,): the cycle each operation issues in.
    """
    n = len(engines)
    for engine in set(engines):
        if engine not in slot_limits:
            raise ValueError(f"every engine needs a slot limit; {engine!r} has none in {sorted(slot_limits)}")
        check_positive_int(f"slot_limits[{engine!r}]", slot_limits[engine])
    preds, succs = [[] for _ in range(n)], [[] for _ in range(n)]
    for p, c in deps:
        if not (0 <= p < c < n):
            raise ValueError(f"deps must point forward within 0..{n - 1} (producer < consumer); got ({p}, {c})")
        preds[c].append(p)
        succs[p].append(c)
    height = np.ones(n, dtype=np.int64)  # (n,) cycles from issuing op i to the end, i included
    for i in range(n - 1, -1, -1):
        height[i] += max((height[c] for c in succs[i]), default=0)
    cycle, t = np.full(n, -1, dtype=np.intp), 0  # indices: np.bincount takes them on 32-bit numpy too (Pyodide)
    while (cycle < 0).any():
        ready = [i for i in range(n) if cycle[i] < 0 and all(0 <= cycle[p] < t for p in preds[i])]
        used = dict.fromkeys(slot_limits, 0)
        for i in sorted(ready, key=lambda i: (-height[i], i)):
            if used[engines[i]] < slot_limits[engines[i]]:
                cycle[i], used[engines[i]] = t, used[engines[i]] + 1
        t += 1
    return cycle
