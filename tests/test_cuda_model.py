"""mha_kit.cuda_model against the rules it restates: the CUDA C++ Programming Guide's thread
hierarchy, shared-memory banks (compute capability 5.x and later), SIMT divergence and memory-fence
example; Harris's "Optimizing Parallel Reduction in CUDA" kernels; the NVCC documentation's
binary and PTX compatibility rules."""
import numpy as np
import pytest

import mha_kit as mk


def test_thread_index_is_x_fastest():
    # Programming Guide, Thread Hierarchy: thread (x, y, z) of a (Dx, Dy, Dz) block is x + y Dx + z Dx Dy
    thread, block, global_id = mk.thread_global_index((3, 2, 1), (1, 2, 1), (8, 4, 2), (4, 3, 2))
    assert thread == 3 + 2 * 8 + 1 * 8 * 4
    assert block == 1 + 2 * 4 + 1 * 4 * 3
    assert global_id == block * 64 + thread
    # every thread of a small launch gets a distinct global index, 0 .. total - 1
    ids = {mk.thread_global_index((x, y, 0), (bx, by, 0), (4, 2, 1), (3, 2, 1))[2]
           for x in range(4) for y in range(2) for bx in range(3) for by in range(2)}
    assert ids == set(range(48))


def test_thread_index_errors():
    with pytest.raises(ValueError, match="at most 1024 threads"):
        mk.thread_global_index((0, 0, 0), (0, 0, 0), (32, 32, 2), (1, 1, 1))
    with pytest.raises(ValueError, match="must lie inside"):
        mk.thread_global_index((8, 0, 0), (0, 0, 0), (8, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="three entries"):
        mk.thread_global_index((0, 0), (0, 0, 0), (8, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="positive integer"):
        mk.thread_global_index((0, 0, 0), (0, 0, 0), (0, 1, 1), (1, 1, 1))


def test_bank_conflicts_of_the_transpose_tile():
    lanes = np.arange(32)
    assert mk.bank_conflict_degree(lanes) == 1  # a row: 32 consecutive words, 32 banks
    assert mk.bank_conflict_degree(32 * lanes) == 32  # a column of float[32][32]: one bank
    assert mk.bank_conflict_degree(33 * lanes) == 1  # padded to [32][33]
    assert mk.bank_conflict_degree(np.zeros(32, int)) == 1  # one word: a broadcast
    assert mk.bank_conflict_degree(2 * lanes) == 2  # stride 2 words: 2-way
    assert mk.bank_conflict_degree(32 * lanes + (lanes ^ 5)) == 1  # XOR swizzle of the column
    with pytest.raises(ValueError, match="non-negative word indices"):
        mk.bank_conflict_degree([-1, 0])
    with pytest.raises(ValueError, match="positive integer"):
        mk.bank_conflict_degree([0], banks=0)


def test_divergent_warps():
    taken = np.arange(64) < 40  # warp 0 all in, warp 1 split at lane 8
    assert mk.divergent_warps(taken) == (1, 2)
    assert mk.divergent_warps(np.ones(96, bool)) == (0, 3)
    with pytest.raises(ValueError, match="whole number of warps"):
        mk.divergent_warps(np.ones(40, bool))


def test_tree_steps_cover_every_value_once():
    # every scheme must add each of the block's values into word 0 exactly once
    for scheme in ("interleaved", "strided", "sequential"):
        values = np.arange(256, dtype=np.int64)
        for s, _, words in mk.tree_reduction_steps(256, scheme):
            values[words] += values[words + s]
        assert values[0] == sum(range(256)), scheme
    with pytest.raises(ValueError, match="power of two"):
        mk.tree_reduction_steps(96, "sequential")
    with pytest.raises(ValueError, match="scheme must be one of"):
        mk.tree_reduction_steps(256, "shuffle")


def test_tree_costs_by_hand_for_256_threads():
    # interleaved: 8, 8, 8, 8, 8, 4, 2, 1 warps issue (s = 1 .. 128), every one of them split
    inter = mk.reduction_tree_costs(256, "interleaved")
    assert (inter.warp_steps, inter.divergent_warp_steps, inter.worst_conflict) == (47, 47, 1)
    # strided: 4 warps x 2-way, 2 x 4-way, then one warp at 8-way for s = 4, 8, 16, then 4, 2, 1 lanes
    strided = mk.reduction_tree_costs(256, "strided")
    assert (strided.warp_steps, strided.worst_conflict) == (8 + 8 + 8 + 8 + 8 + 4 + 2 + 1, 8)
    seq = mk.reduction_tree_costs(256, "sequential")  # 4 + 2 + 1 + 1 + 1 + 1 + 1 + 1 warps
    assert (seq.warp_steps, seq.divergent_warp_steps, seq.barriers) == (12, 5, 9)
    last = mk.reduction_tree_costs(256, "last-warp")  # s = 128, 64, 32 by whole warps, 5 shuffles
    assert (last.warp_steps, last.barriers, last.divergent_warp_steps) == (4 + 2 + 1 + 5, 4, 0)
    shuffle = mk.reduction_tree_costs(256, "shuffle")  # 8 warps x 5 shuffles, then 3 for 8 partials
    assert (shuffle.warp_steps, shuffle.barriers, shuffle.steps) == (8 * 5 + 3, 1, 8)


def test_ladder():
    ladder = mk.reduction_ladder(2**22, 256, 132 * 8)
    assert [step.blocks for step in ladder] == [2**14] * 3 + [2**13] * 2 + [1056]
    assert ladder[-1].loads_per_thread == -(-2**22 // (1056 * 256))
    assert ladder[3].warp_steps * 2 == ladder[2].warp_steps  # half the blocks
    with pytest.raises(ValueError, match="multiple of 2 \\* block"):
        mk.reduction_ladder(1000, 256, 8)


def test_last_block_combine_needs_the_fence():
    partials = [1.0, 2.0, 3.0, 4.0]
    assert mk.last_block_combine(partials, [2, 0, 3, 1]) == (10.0, 1)
    assert mk.last_block_combine(partials, [2, 0, 3, 1], unfenced=[0]) == (9.0, 1)
    with pytest.raises(ValueError, match="permutation"):
        mk.last_block_combine(partials, [0, 1, 2])


def test_fatbin_rules():
    # NVCC: sm_80 SASS runs on 8.6 (same major, newer minor), not on 9.0; PTX JIT-compiles forward
    assert mk.fatbin_code_for(["sm_80", "compute_80"], "8.6") == ("sass", "sm_80")
    assert mk.fatbin_code_for(["sm_80", "compute_80"], "9.0") == ("ptx-jit", "compute_80")
    assert mk.fatbin_code_for(["sm_86"], "8.0") == ("none", "")
    # arch-specific sm_90a runs only on 9.0
    assert mk.fatbin_code_for(["sm_80", "sm_90a", "compute_90"], "9.0") == ("sass", "sm_90a")
    assert mk.fatbin_code_for(["sm_80", "sm_90a", "compute_90"], "10.0") == ("ptx-jit", "compute_90")
    assert mk.fatbin_code_for(["sm_90a"], "10.0") == ("none", "")
    with pytest.raises(ValueError, match="compute capability"):
        mk.fatbin_code_for(["sm_80"], "sm_90")
    with pytest.raises(ValueError, match="targets must look like"):
        mk.fatbin_code_for(["arch_80"], "9.0")
