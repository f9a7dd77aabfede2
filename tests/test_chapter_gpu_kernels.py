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
