"""mha_kit.gpu_kernels, checked against its primary sources: vLLM's moe_align_block_size docstring
example and fused_experts pipeline, Triton's fused-attention tutorial, FlashAttention-3's hdim-128
tile sizes and register budget, the Hopper Tuning Guide's per-SM limits."""
import numpy as np
import pytest

import mha_kit as mk

H100 = mk.GPUS["h100-sxm"]


def test_h100_per_sm_limits_from_the_hopper_tuning_guide():
    # sec. 1.4.1.1: 64K 32-bit registers, 64 warps, 228 KB shared memory per SM (compute capability 9.0)
    assert (H100.registers_per_sm, H100.max_warps_per_sm, H100.shared_bytes_per_sm) == (65_536, 64, 233_472)
    assert "228 KB" in H100.source and "nvidiahoppertuning" in H100.cite


def test_fused_add_rmsnorm_bytes_by_hand():
    # add: read x, r; write h. norm: read h, w; write y. Fused: read x, r, w; write h, y.
    n = 10
    unfused, fused = mk.fused_chain_bytes([(("x", "r"), ("h",)), (("h", "w"), ("y",))],
                                          {"x": n, "r": n, "h": n, "w": 1, "y": n}, ("h", "y"))
    assert (unfused, fused) == (2 * (3 * n + 2 * n + 1), 2 * (4 * n + 1))


def test_fused_chain_errors():
    with pytest.raises(ValueError, match=r"^every tensor needs a size; 'q' has none$"):
        mk.fused_chain_bytes([(("q",), ("y",))], {"y": 1}, ("y",))
    with pytest.raises(ValueError, match=r"^outputs must be written by the chain; \['z'\] are not$"):
        mk.fused_chain_bytes([(("x",), ("y",))], {"x": 1, "y": 1}, ("z",))


def test_sectors_for_coalesced_vector_and_strided_loads():
    assert mk.sectors_touched([2 * lane for lane in range(32)], 2) == 2  # 64 contiguous bytes
    assert mk.sectors_touched([16 * lane for lane in range(32)], 16) == 16  # 512 contiguous bytes
    assert mk.sectors_touched([256 * lane for lane in range(32)], 2) == 32  # one sector per lane
    assert mk.sectors_touched([30], 4) == 2  # an access straddling a sector boundary


def test_sectors_errors():
    with pytest.raises(ValueError, match=r"^byte_offsets must be a non-empty list of non-negative addresses, got \[\]$"):
        mk.sectors_touched([], 2)
    with pytest.raises(ValueError, match=r"^access_bytes must be a positive integer, got 0$"):
        mk.sectors_touched([0], 0)


def test_fa3_hdim128_tile_fits_one_block_per_h100_sm():
    # hopper/tile_size.h: hdim 128, 16-bit, causal -> 128 x 128; kStages = 2 on sm90;
    # flash_fwd_kernel_sm90.h: 2 MMA warpgroups at 240 registers, 1 producer warpgroup at 24.
    smem = mk.attention_tile_smem_bytes(128, 128, 128, 2)
    assert smem == 2 * (128 * 128 + 2 * 2 * 128 * 128) == 163_840
    registers = 128 * 24 + 2 * 128 * 240
    assert registers == 64_512
    assert mk.blocks_per_sm(H100, 384, registers, smem) == 1
    assert mk.accumulator_registers(64, 128, 128, 128) == 128  # S and O of one warpgroup's 64 rows


def test_blocks_per_sm_picks_the_tightest_limit_and_refuses_what_does_not_fit():
    assert mk.blocks_per_sm(H100, 128, 16_384, 1024) == 4  # registers bind
    assert mk.blocks_per_sm(H100, 64, 1024, 1024) == 32  # warps bind: 2048 threads
    with pytest.raises(ValueError, match=r"^one block must fit on an SM: 70000 registers \(SM has 65536\)"):
        mk.blocks_per_sm(H100, 128, 70_000, 1024)
    with pytest.raises(ValueError, match=r"^a100-40gb has no per-SM limits recorded"):
        mk.blocks_per_sm(mk.GPUS["a100-40gb"], 128, 1, 1)


def test_blocks_per_sm_stops_at_the_resident_block_cap():
    # CUDA C++ Programming Guide, Table "Technical Specifications per Compute Capability": cc 9.0 and 10.0 hold at
    # most 32 resident blocks and 64 resident warps per SM. 32-thread blocks: 64 by warps, 32 by the block cap.
    for gpu in (H100, mk.GPUS["b200-hgx"]):
        assert gpu.max_blocks_per_sm == 32
        assert mk.blocks_per_sm(gpu, 32, 32 * 32, 256) == 32
        assert mk.occupancy_limits(gpu, 32, 32 * 32, 256) == {
            "registers": 64, "shared memory": 228 * 1024 // 256, "warps": 64, "blocks": 32}
    assert mk.blocks_per_sm(H100, 64, 64 * 32, 256) == 32  # 64-thread blocks reach 64 warps at the cap


def test_registers_are_allocated_per_sub_partition():
    # cuda_occupancy.h, cudaOccMaxBlocksPerSMRegsLimit: warps per sub-partition = (registers per SM / 4) //
    # registers per warp, times 4 sub-partitions, then whole blocks. Best Practices' example (37 registers a
    # thread, 1,280 a warp): 128-thread blocks 12, 320-thread blocks 4 (dividing the whole file would give 5).
    assert mk.occupancy_limits(H100, 320, mk.block_registers(320, 37), 1024)["registers"] == 4
    assert mk.occupancy_limits(H100, 128, mk.block_registers(128, 37), 1024)["registers"] == 12
    for threads, regs, blocks in ((256, 64, 4), (256, 65, 3), (256, 32, 8), (32, 32, 64)):
        assert mk.occupancy_limits(H100, threads, mk.block_registers(threads, regs), 1)["registers"] == blocks
    assert mk.occupancy_limits(H100, 1024, mk.block_registers(1024, 72), 1024)["registers"] == 0  # 7 warps a quarter


def test_partial_warps_take_a_whole_warp_slot_and_blocks_stop_at_1024_threads():
    assert mk.occupancy_limits(H100, 100, 4 * 256, 1024)["warps"] == 16  # 4 warps a block; 2048 // 100 = 20
    with pytest.raises(ValueError, match=r"^a block may have at most 1024 threads, got 2048$"):
        mk.occupancy_limits(H100, 2048, 2048 * 32, 1024)


def test_block_registers_round_per_warp_to_256_and_stop_at_255():
    # CUDA C++ Best Practices Guide, "Calculating Occupancy": "register allocations are rounded up to the nearest
    # 256 registers per warp"; its example kernel uses 37 registers a thread: 37 x 32 = 1,184 -> 1,280 per warp.
    assert mk.block_registers(128, 37) == 4 * 1280
    assert mk.block_registers(320, 37) == 10 * 1280
    assert mk.block_registers(256, 64) == 256 * 64  # 2,048 a warp is already a multiple of 256
    assert mk.block_registers(100, 8) == 4 * 256  # a partial warp still takes a whole warp's registers
    with pytest.raises(ValueError, match=r"^a thread may use at most 255 registers, got 256$"):
        mk.block_registers(128, 256)


def test_block_shared_bytes_caps_static_at_48_kb_and_a_block_at_227_kb():
    # CUDA C++ Programming Guide, cc 9.0 Shared Memory: over 48 KB per block needs dynamic shared memory and the
    # cudaFuncAttributeMaxDynamicSharedMemorySize opt-in; one block addresses up to 227 KB.
    assert mk.block_shared_bytes(H100, 48 * 1024) == (49_152, False)
    assert mk.block_shared_bytes(H100, 0, 48 * 1024 + 1) == (49_153, True)
    assert mk.block_shared_bytes(H100, 16 * 1024, 211 * 1024) == (227 * 1024, True)
    with pytest.raises(ValueError, match=r"^static shared memory is capped at 49152 B a block, got 49153"):
        mk.block_shared_bytes(H100, 48 * 1024 + 1)
    with pytest.raises(ValueError, match=r"^one block may address at most 232448 B of shared memory on h100-sxm"):
        mk.block_shared_bytes(H100, 0, 227 * 1024 + 1)
    with pytest.raises(ValueError, match=r"^static_bytes must be a non-negative integer, got 1024.5$"):
        mk.block_shared_bytes(H100, 1024.5)  # not truncated to 1024


def test_accumulator_registers_must_split_evenly():
    with pytest.raises(ValueError, match=r"^rows \* \(block_n \+ head_dim\) = 3 must split evenly over threads = 2$"):
        mk.accumulator_registers(1, 1, 2, 2)


@pytest.mark.parametrize("causal", [False, True])
def test_triton_emulation_matches_plain_attention(causal):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 2, 128, 16)) for _ in range(3))
    out, lse = mk.triton_attention(q, k, v, block_m=64, block_n=32, causal=causal)
    mask = mk.causal_mask(128) if causal else None
    ref, _ = mk.scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_allclose(out, ref, atol=1e-8)  # 1.44269504 is 1/ln 2 to 9 digits, as in the tutorial
    scores = q @ np.swapaxes(k, -1, -2) / 4.0
    if causal:
        scores = np.where(mask, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    np.testing.assert_allclose(lse, ((top[..., 0] + np.log(np.exp(scores - top).sum(-1))) / np.log(2)), rtol=1e-7)


def test_triton_shape_errors():
    x = np.zeros((1, 1, 96, 8))
    with pytest.raises(ValueError, match=r"^n = 96 must be a multiple of block_m = 64"):
        mk.triton_attention(x, x, x, 64, 32)
    with pytest.raises(ValueError, match=r"^q, k and v must share one shape"):
        mk.triton_attention(x[0], x[0], x[0])


def test_moe_align_block_size_reproduces_vllms_docstring_example():
    # vllm/model_executor/layers/fused_moe/moe_align_block_size.py: ids 1..4, block 4 ->
    # [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12] (12 = the padding row)
    ids = np.array([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]])
    sorted_ids, expert_ids, total = mk.moe_align_block_size(ids, 4, 5)
    assert sorted_ids.tolist() == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12]
    assert expert_ids.tolist() == [1, 2, 3, 4] and total == 16
    with pytest.raises(ValueError, match=r"^expert ids must lie in \[0, num_experts = 4\), got 1\.\.4$"):
        mk.moe_align_block_size(ids, 4, 4)


def test_fused_experts_equals_the_per_token_loop():
    rng = np.random.default_rng(2)
    tokens, d, experts, inter, top_k = 9, 8, 4, 6, 2
    x = rng.standard_normal((tokens, d))
    w1, w2 = rng.standard_normal((experts, 2 * inter, d)), rng.standard_normal((experts, d, inter))
    ids = np.array([rng.choice(experts, top_k, replace=False) for _ in range(tokens)])
    weights = rng.random((tokens, top_k))
    expected = np.zeros_like(x)
    for t in range(tokens):
        for slot in range(top_k):
            gate, up = np.split(w1[ids[t, slot]] @ x[t], 2)
            expected[t] += weights[t, slot] * (w2[ids[t, slot]] @ (gate / (1 + np.exp(-gate)) * up))
    np.testing.assert_allclose(mk.fused_experts(x, w1, w2, weights, ids, block_size=4), expected, atol=1e-12)
