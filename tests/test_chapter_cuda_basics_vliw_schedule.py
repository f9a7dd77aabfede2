"""cuda_basics-vliw-schedule: the take-home's load floor, the walk's levels, the list-scheduling example.

Machine and sizes from anthropics/original_performance_takehome (commit 5452f74): problem.py SLOT_LIMITS
(load 2 a cycle), Tree (perfect binary tree, 2**(h+1) - 1 nodes), reference_kernel (idx = 2 idx + 1 or 2,
0 past the last node); tests/submission_tests.py do_kernel_test(10, 16, 256); Readme.md 1,487 and 1,363.
"""

import numpy as np

import mha_kit as mk

SLOTS = {"alu": 12, "valu": 6, "load": 2, "store": 2, "flow": 1}
HEIGHT, ROUNDS, BATCH = 10, 16, 256


def walk_levels(seed=0):
    """Run reference_kernel's index update with random parities; return each round's level per lane."""
    n_nodes = 2 ** (HEIGHT + 1) - 1
    idx = np.zeros(BATCH, dtype=np.int64)
    rng = np.random.default_rng(seed)
    levels = []
    for _ in range(ROUNDS):
        levels.append(np.floor(np.log2(idx + 1)).astype(int))  # level of node idx in the implicit tree
        idx = 2 * idx + np.where(rng.integers(0, 2, BATCH) == 0, 1, 2)
        idx[idx >= n_nodes] = 0
    return np.array(levels)  # (rounds, batch)


def test_scalar_node_loads_floor_exceeds_published_schedules():
    loads = BATCH * ROUNDS
    assert loads == 4096
    floor = -(-loads // 2)
    assert floor == 2048 and mk.engine_cycle_bound({"load": loads}, SLOTS) == (2048, "load")
    assert 1487 < floor and 1363 < floor


def test_every_lane_sits_at_level_round_mod_11():
    levels = walk_levels()
    for r in range(ROUNDS):
        assert set(levels[r].tolist()) == {r % (HEIGHT + 1)}


def test_top_levels_in_scratch_cut_the_loads():
    level_per_round = walk_levels()[:, 0]
    for top, cycles in ((0, 2048), (1, 1792), (4, 1024), (6, 640)):
        loads = BATCH * int((level_per_round >= top).sum())
        assert -(-loads // 2) == cycles
    assert 2**4 - 1 == 15 and 2 * BATCH <= 1536  # 15 tree words; indices and values fit SCRATCH_SIZE


def test_list_schedule_example():
    engines, deps = [], []
    for v in range(4):
        base = 18 * v
        engines += ["load"] * 8 + ["valu"] * 10
        deps += [(base + lane, base + 8) for lane in range(8)]
        deps += [(base + 8 + i, base + 9 + i) for i in range(9)]
    cycle = mk.list_schedule(engines, deps, SLOTS)
    assert len(engines) == 72
    assert cycle.max() + 1 == 16 + 10  # loads fill 2 slots for 16 cycles; the last vector's 10-op chain follows
    assert max(-(-32 // 2), -(-40 // 6), 1 + 10) == 16
    assert mk.engine_cycle_bound({"load": 32, "valu": 40}, SLOTS, span=11) == (16, "load")


# problem.py HASH_STAGES and myhash (commit 5452f74): a = r(op2(r(op1(a, val1)), r(op3(a, val3)))), r = mod 2**32
HASH_STAGES = [("+", 0x7ED55D16, "+", "<<", 12), ("^", 0xC761C23C, "^", ">>", 19), ("+", 0x165667B1, "+", "<<", 5),
               ("+", 0xD3A2646C, "^", "<<", 9), ("+", 0xFD7046C5, "+", "<<", 3), ("^", 0xB55A4F09, "^", ">>", 16)]


def myhash(a):
    """problem.py myhash, transcribed with Python ints."""
    fns = {"+": lambda x, y: x + y, "^": lambda x, y: x ^ y, "<<": lambda x, y: x << y, ">>": lambda x, y: x >> y}
    for op1, val1, op2, op3, val3 in HASH_STAGES:
        a = fns[op2](fns[op1](a, val1) % 2**32, fns[op3](a, val3) % 2**32) % 2**32
    return a


def folded_hash(a):
    """Stages (a + c) + (a << k) as one multiply_add a * (1 + 2**k) + c (Machine.valu multiply_add, mod 2**32)."""
    for op1, val1, op2, op3, val3 in HASH_STAGES:
        if (op1, op2, op3) == ("+", "+", "<<"):
            a = (a * (1 + 2**val3) + val1) % 2**32
        else:
            a = myhash_stage(a, op1, val1, op2, op3, val3)
    return a


def myhash_stage(a, op1, val1, op2, op3, val3):
    fns = {"+": lambda x, y: x + y, "^": lambda x, y: x ^ y, "<<": lambda x, y: x << y, ">>": lambda x, y: x >> y}
    return fns[op2](fns[op1](a, val1) % 2**32, fns[op3](a, val3) % 2**32) % 2**32


def test_multiply_add_fold_equals_myhash():
    rng = np.random.default_rng(1)
    for a in [0, 1, 2**32 - 1, *rng.integers(0, 2**32, 300).tolist()]:
        assert folded_hash(a) == myhash(a)
    assert sum((s[0], s[2], s[3]) == ("+", "+", "<<") for s in HASH_STAGES) == 3  # stages 0, 2, 4 fold


def test_valu_bound_binds_after_caching_the_top_levels():
    vector_rounds = (BATCH // 8) * ROUNDS  # VLEN 8: 32 vectors x 16 rounds
    assert vector_rounds == 512
    naive, folded = vector_rounds * (1 + 18 + 3), vector_rounds * (1 + 12 + 3)  # XOR, hash, index update
    assert (naive, folded) == (11264, 8192)
    assert mk.engine_cycle_bound({"valu": naive}, SLOTS) == (1878, "valu")  # ceil(11264 / 6)
    assert mk.engine_cycle_bound({"valu": folded}, SLOTS) == (1366, "valu")  # ceil(8192 / 6) = 1365.33 -> 1366
    # pooled: 6 vector slots of 8 lanes plus 12 scalar ALU slots = 60 lane-ops a cycle
    assert mk.engine_cycle_bound({"lane": 8 * folded}, {"lane": 60}) == (1093, "lane")  # 65536 / 60 = 1092.27
    assert mk.engine_cycle_bound({"lane": 8 * naive}, {"lane": 60}) == (1502, "lane")
    load_floor_top4 = BATCH * 8 // 2  # rounds at levels >= 4: 4..10 and 15 -> 8 rounds, 2 loads a cycle
    assert load_floor_top4 == 1024 < 1366
