"""mha_kit.vliw against hand-worked schedules and the take-home's machine (problem.py SLOT_LIMITS)."""

import numpy as np
import pytest

import mha_kit as mk

TAKEHOME_SLOTS = {"alu": 12, "valu": 6, "load": 2, "store": 2, "flow": 1}  # problem.py SLOT_LIMITS


def test_bound_is_the_slowest_engine_or_the_span():
    # 4,096 scattered loads at 2 a cycle: 2,048 cycles, whatever else the kernel does
    assert mk.engine_cycle_bound({"load": 4096, "valu": 6000}, TAKEHOME_SLOTS) == (2048, "load")
    assert mk.engine_cycle_bound({"valu": 6001}, TAKEHOME_SLOTS) == (1001, "valu")  # ceil(6001 / 6)
    assert mk.engine_cycle_bound({"flow": 3}, TAKEHOME_SLOTS, span=10) == (10, "span")


def test_list_schedule_hand_worked():
    # three loads feed two vector ops that feed one store; two load slots a cycle
    engines = ["load", "load", "load", "valu", "valu", "store"]
    deps = [(0, 3), (1, 3), (2, 4), (3, 5), (4, 5)]
    cycle = mk.list_schedule(engines, deps, TAKEHOME_SLOTS)
    np.testing.assert_array_equal(cycle, [0, 0, 1, 1, 2, 3])


def test_schedule_respects_slots_and_dependences_and_meets_the_bound():
    rng = np.random.default_rng(0)
    names = ["load", "valu", "flow"]
    engines = [names[i] for i in rng.integers(0, 3, size=40)]
    deps = [(p, c) for c in range(40) for p in range(max(0, c - 3), c) if rng.random() < 0.3]
    cycle = mk.list_schedule(engines, deps, TAKEHOME_SLOTS)
    for p, c in deps:
        assert cycle[c] > cycle[p]
    for name in names:
        per_cycle = np.bincount(cycle[[e == name for e in engines]], minlength=cycle.max() + 1)
        assert per_cycle.max() <= TAKEHOME_SLOTS[name]
    counts = {name: engines.count(name) for name in names}
    assert cycle.max() + 1 >= mk.engine_cycle_bound(counts, TAKEHOME_SLOTS)[0]


def test_independent_chains_fill_the_slots():
    # 6 independent chains of 4 vector ops: one op a cycle each alone, all 6 side by side in 4 cycles
    engines = ["valu"] * 24
    deps = [(4 * j + i, 4 * j + i + 1) for j in range(6) for i in range(3)]
    assert mk.list_schedule(engines, deps, TAKEHOME_SLOTS).max() + 1 == 4


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="slot limit"):
        mk.engine_cycle_bound({"tensor": 1}, TAKEHOME_SLOTS)
    with pytest.raises(ValueError, match="slot limit"):
        mk.list_schedule(["tensor"], [], TAKEHOME_SLOTS)
    with pytest.raises(ValueError, match="point forward"):
        mk.list_schedule(["load", "load"], [(1, 0)], TAKEHOME_SLOTS)
    with pytest.raises(ValueError, match="slot_limits"):
        mk.engine_cycle_bound({"load": 1}, {"load": 0})
