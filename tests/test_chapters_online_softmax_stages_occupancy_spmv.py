"""The numbers of the sections on online softmax's cost, pipeline stages, occupancy, SpMV, strides and a privatised
histogram (softmax_numerics online-cost; gpu_kernels fusion-slower, num-stages, no-shared-memory, spmv; cuda_basics
strides, histogram), recomputed by hand with the products written out, never read back from the notebooks."""
import math

import numpy as np

import mha_kit as mk

H100 = mk.GPUS["h100-sxm"]


def test_online_softmax_cost_and_roofline():
    safe_accesses, online_accesses = 3 + 1, 2 + 1  # loads + store per element (Milakov & Gimelshein)
    safe_exps, online_exps = 2, 3
    assert 1 - online_accesses / safe_accesses == 0.25
    clock = 67e12 / (132 * 2 * 128)  # the FP32 peak's clock: 128 FMA lanes, 2 FLOPs each
    exp_rate = 16 * 132 * clock  # MUFU results per second
    for accesses, exps in ((safe_accesses, safe_exps), (online_accesses, online_exps)):
        assert accesses * 4 / 3.35e12 > 4 * exps / exp_rate  # memory-bound by a wide margin
    assert round(safe_accesses / online_accesses, 2) == 1.33  # the roofline speed-up the chapter prints


def test_pipeline_stage_floor_and_ceiling():
    mma_cycles = 2 * 128 * 128 * 64 / 4096  # one bf16 128x128x64 stage at 4096 dense FLOPs a clock per SM
    assert mma_cycles == 512 and H100.tensor_flops_per_clock_per_sm == 4096
    assert 1 + math.ceil(700 / 512) == 3 and 1 + math.ceil(291 / 512) == 2
    stage = (128 + 128) * 64 * 2 + 2 * 8  # A and B tiles plus a full and an empty mbarrier
    assert 232448 // stage == 7 and (232448 - 32768) // stage == 6
    fa3_three_stages = (128 * 128 + 3 * 2 * 128 * 128) * 2  # Q + three K and V stages, bf16, head dim 128
    assert fa3_three_stages == 224 * 1024 < 232448


def test_fusion_occupancy_and_grid():
    assert 65536 // (256 * 64) * 256 // 32 == 32  # 64 registers: 4 blocks of 8 warps
    assert 65536 // (256 * 168) * 256 // 32 == 8  # 168 registers: 1 block
    assert 4 * mk.get_model_facts("llama-3-8b").config.num_kv_heads == 32 and round(32 / 132, 3) == 0.242


def test_shared_memory_costs_blocks_and_l1():
    # 256 threads x 32 registers allow 8 blocks; 48 KiB a block allows 233,472 // 49,152 = 4
    assert min(65536 // (256 * 32), 233472 // (48 * 1024), 2048 // 256) == 4
    assert 262144 - 4 * 48 * 1024 == 64 * 1024  # a quarter of the L1 + shared array
    assert 262144 - 2 * 100 * 1024 == 56 * 1024


def test_spmv_intensities_and_break_even():
    assert 2 / 4 == 0.5 and 2 / (4 + 4) == 0.25 and 2 / (4 + 4 + 32) == 0.05
    assert round(2 / (2 + 4), 3) == 0.333 and 2 / (2 + 2) == 0.5  # bf16 values, int32 / int16 indices
    assert 0.5 * (2 + 2 / 8) / 2 == 0.5625  # 2:4: half the values plus 2 bits each


def test_fused_qkv_view_and_channels_last():
    cfg = mk.get_model_facts("llama-3-8b").config
    row = cfg.num_heads * cfg.head_dim + 2 * cfg.num_kv_heads * cfg.head_dim
    assert row == 32 * 128 + 2 * 8 * 128 == 6144
    assert (4 - 1) * 8 * 128 == 3072  # every row but the first read at the wrong stride
    assert 32 * 2 // 32 == 2  # NHWC: 32 bf16 channels = 64 contiguous bytes = 2 sectors
    assert 56 * 56 * 2 > 32  # NCHW: channels a plane apart, one sector each


def test_privatised_histogram_bounds():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1000, 1_000_000)
    blocks = 2 * 132
    per_block = -(-1_000_000 // blocks)
    c = mk.histogram_atomics(ids, 1000, per_block)
    assert c["blocks"] == blocks and c["privatized"] <= blocks * 1000
    # expected distinct bins a block touches with uniform ids: 1000 * (1 - (1 - 1/1000) ** per_block)
    expected = blocks * 1000 * (1 - (1 - 1 / 1000) ** per_block)
    assert abs(c["privatized"] - expected) < 0.01 * expected
