"""The numbers chapter "Attention kernels on the GPU" states, recomputed by hand (products written
out), not read back from the notebook."""
import numpy as np
import pytest

import mha_kit as mk

H100 = mk.GPUS["h100-sxm"]


def test_add_rmsnorm_fusion_saves_a_fifth_and_about_1_3_ms_per_8k_prefill():
    n, d = 8192, 4096  # Llama 3 8B hidden size
    unfused = 2 * (3 * n * d) + 2 * (2 * n * d + d)  # add: x, r, h; norm: h, w, y
    fused = 2 * (4 * n * d + d)  # x, r, w in; h, y out
    assert mk.fused_chain_bytes([(("x", "r"), ("h",)), (("h", "w"), ("y",))],
                                {"x": n * d, "r": n * d, "h": n * d, "w": d, "y": n * d}, ("h", "y")) == (unfused, fused)
    assert 1 - fused / unfused == pytest.approx(0.2, abs=1e-4)  # one read of h in ten n x d passes
    saved_us = 64 * (n * d) * 2 / 3.35e12 * 1e6  # 32 layers x 2 norms; h (n x d, bf16) no longer re-read
    assert round(saved_us) == 1282


def test_fa3_share_of_the_compute_roof_and_the_prefill_intensity():
    assert 740 / 989 == pytest.approx(0.748, abs=5e-4)
    n, d, h = 8192, 128, 32
    assert (4 * n * n * d * h) / (4 * n * d * h * 2) == n / 2 == 4096  # FLOPs over Q, K, V, O bytes in bf16
    assert mk.roofline.decode_intensity(mk.get_model_facts("llama-3-8b").config) == 2 * 4 / 2  # 2g/b, g = 32/8


def test_fa3_block_fills_the_register_file_at_under_a_fifth_occupancy():
    registers = 128 * 24 + 256 * 240
    smem = 2 * (128 * 128 + 2 * (128 * 128 + 128 * 128))
    assert (registers, smem) == (64_512, 160 * 1024)
    assert 65_536 // registers == 1 and 2 * smem > 228 * 1024  # one block per SM, by registers and by shared memory
    assert 12 / 64 == pytest.approx(0.1875)
    assert mk.blocks_per_sm(H100, 384, registers, smem) == 1
    assert (64 * 128 + 64 * 128) // 128 == 128  # S and O of 64 rows over 128 threads


def test_sector_counts_and_instruction_counts():
    assert (32 * 2) // 32 == 2 and (32 * 16) // 32 == 16  # contiguous: bytes / 32
    assert mk.sectors_touched(256 * np.arange(32), 2) == 32 and 64 / (32 * 32) == 0.0625
    tile = 128 * 128 * 2
    assert (tile // (32 * 2), tile // (32 * 16)) == (512, 64)


def test_unfused_attention_moves_16_gib_of_scores_per_layer_at_8k():
    n = 8192
    assert 4 * 32 * n * n * 2 == 16 * 2**30
    assert (2 * 32 + 2 * 8) * n * 128 * 2 == 160 * 2**20


def test_attention_share_of_layer_flops():
    d, h, kv, hd, inter = 4096, 32, 8, 128, 14336
    linear = 2 * (d * (h + 2 * kv) * hd + h * hd * d + 3 * d * inter)
    share = [4 * (n / 2) * h * hd / (4 * (n / 2) * h * hd + linear) for n in (512, 8192, 131072)]
    assert [round(100 * s, 1) for s in share] == [1.0, 13.3, 71.1]


def test_triton_grid_and_moe_tokens_per_expert():
    assert (8192 // 128) * 32 == 2048
    assert 64 * 8 / 256 == 2.0 and 4096 * 8 / 256 == 128.0
    assert round(989e12 / 3.35e12 * 256 / 8) == 9447  # global batch whose tokens per expert reach the ridge


# --- The hardware sections (memory hierarchy, peak FLOPs, tensor vs CUDA cores, SFU, GEMM ladder) ---

def test_memory_hierarchy_sizes_and_computed_bandwidths():
    assert 65_536 * 4 == 256 * 1024  # the H100 register file per SM, bytes
    clock = 67e12 / (132 * 128 * 2)  # the clock the FP32 peak assumes
    assert round(132 * 32 * 4 * clock / 1e12, 1) == 33.5  # shared memory: 32 banks x 4 B per clock per SM
    assert round(132 * 128 * 3 * 4 * clock / 1e12, 1) == 402.0  # FP32 FMA operands from registers
    assert round(132 * 32 * 4 * clock / 3.35e12) == 10


def test_fa3_l2_section_for_llama_8b_at_8k():
    one_kv_head = 8192 * (128 + 128) * 2
    assert one_kv_head == 4 * 2**20 and (32 * 2**20) // one_kv_head == 8
    assert 8 * (32 // 8) == 32  # query heads scheduled together (not PackGQA)


def test_peak_flops_and_implied_clocks():
    assert round(312e12 / (108 * 2048) / 1e9, 2) == 1.41 and round(19.5e12 / (108 * 128) / 1e9, 2) == 1.41
    assert round(989e12 / (132 * 4096) / 1e9, 2) == 1.83 and round(67e12 / (132 * 256) / 1e9, 2) == 1.98


def test_tensor_to_cuda_core_ratios():
    assert round(312 / 19.5, 1) == 16.0 and round(989 / 67, 1) == 14.8 and round(2250 / 75, 1) == 30.0


def test_exp_share_of_matmul_time():
    mma, exp = 4 * 128 / 4096, 1 / 16  # SM-clocks per score, head dim 128
    assert exp / mma == 0.5
    # B200, per SM: twice Hopper's tensor rate (8,192 FLOPs a clock), the same 16 exponentials a clock
    mma_b200 = 4 * 128 / 8192
    assert exp / mma_b200 == 1.0
    # FlashAttention-4 sec. 2: at M = N = D = 128 both take about 1,024 clocks per SM
    assert 4 * 128 * 128 * 128 / 8192 == 1024 and 128 * 128 / 16 == 1024


def test_gemm_tile_intensity_and_traffic():
    assert 2 * 1 * 1 / (2 * 4) == 0.25 and 2 * 128 * 128 / (256 * 2) == 64.0
    n = 4096
    assert (n * n * 2 * n + n * n) * 4 / 2**30 == pytest.approx(512.06, abs=0.01)  # naive fp32
    assert ((n // 128) ** 2 * 256 * n + n * n) * 2 / 2**30 == pytest.approx(2.03, abs=0.01)


def test_measured_latency_ratios():
    # markdewing/AI_kernels latency/README.md, H100 SXM, cycles: L1 40, L2 291, HBM 700
    assert (291 / 40, 700 / 40) == (7.275, 17.5)
    assert f"{291 / 40:4.1f}" == " 7.3" and f"{700 / 40:4.1f}" == "17.5"


def test_no_shared_memory_l1_after_carveout_rounding():
    """gpu_kernels-no-shared-memory: resident blocks and the L1 left on an H100 (256 KB array)."""
    carveouts_kib = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)  # Hopper Tuning Guide
    for smem_kib, blocks, l1_kib in ((0, 8, 248), (16, 8, 92), (48, 4, 60), (100, 2, 28)):
        by_smem = 228 // (smem_kib + 1)  # each block adds CUDA's 1 KB reserve
        by_regs = 65536 // (256 * 32)
        assert min(by_smem, by_regs, 64 // 8) == blocks
        assert mk.blocks_per_sm(H100, 256, 256 * 32, (smem_kib + 1) * 1024) == blocks
        carve = min(c for c in carveouts_kib if c >= blocks * (smem_kib + 1))
        assert 256 - carve == l1_kib


def test_batched_gemm_intensity_is_n_over_3_and_the_h100_ridge_is_about_295():
    for n, expected in ((16, 16 / 3), (256, 256 / 3), (1024, 1024 / 3)):
        assert (2 * n * n * n) / (3 * n * n * 2) == pytest.approx(expected)  # 2n^3 FLOPs over A, B, C in bf16
    assert round(989e12 / 3.35e12) == 295  # dense bf16 peak over HBM3 bandwidth, H100 SXM datasheet
    assert 256 / 3 < 989e12 / 3.35e12 < 1024 / 3  # n = 256 memory-bound, n = 1024 compute-bound


def test_flashattention_limits_score_matrix_share_and_thread_blocks():
    """gpu_kernels-limits: N^2 scores against Q, K, V, O (4 N d) is N / 4d; one request's blocks at 512 tokens."""
    d = 128
    assert 512 * 512 / (4 * 512 * d) == 1.0  # "only 1 times" at 512 tokens
    assert 131_072 / (4 * d) == 256.0
    assert 32 * (512 // 128) == 128  # Llama 3 8B: 32 query heads, 4 query tiles of 128 rows
    assert mk.GPUS["h100-sxm"].num_sms == 132  # H100 SXM5: 132 SMs, so 128 blocks are under one wave
    assert (mk.PRESETS["llama-3-8b"].num_heads, mk.PRESETS["llama-3-8b"].head_dim) == (32, d)
