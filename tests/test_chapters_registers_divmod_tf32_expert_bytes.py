"""The numbers of the sections on registers against warps, CUTLASS's fast divmod, TF32, the GEMV floor, sort passes,
TP=2 INT8 weights, the safetensors layout, expert-parallel bytes, RDMA translation entries, AQLM codebooks and links
(cuda_basics, gpu_kernels, serving_operations, tensor_parallel, weight_quantization), recomputed by hand with
products written out, never read back from the notebooks."""
import json
import struct
from math import comb

import numpy as np

import mha_kit as mk


def test_registers_per_thread_against_warps():
    h100 = mk.GPUS["h100-sxm"]
    assert h100.registers_per_sm == 65_536 and h100.max_warps_per_sm == 64
    assert 65_536 // (255 * 32) == 8  # the 255-register ceiling leaves 8 warps
    assert 65_536 // (128 * 32) == 16 and min(64, 65_536 // (32 * 32)) == 64


def test_cutlass_fast_divmod_matches_integer_division():
    # CUTLASS find_divisor: p = 31 + ceil(log2 d), mul = ceil(2^p / d); quotient = (n * mul) >> p
    n = np.array([0, 1, 6, 7, 8, 2**20 + 3, 2**31 - 2, 2**31 - 1], dtype=np.uint64)
    for d in (3, 5, 7, 12, 96, 1000, 128_256, 2**31 - 1):
        p = 31 + (d - 1).bit_length()
        mul = ((1 << p) + d - 1) // d
        assert mul < 2**32  # fits the 32-bit register __umulhi reads
        assert [int(q) for q in (n * np.uint64(mul)) >> np.uint64(p)] == [int(x) // d for x in n]
    assert (1000 >> 4, 1000 & 15) == divmod(1000, 16)


def test_tf32_rounding_and_rates():
    x = np.random.default_rng(1).standard_normal(10_000).astype(np.float32)
    u = x.view(np.uint32)
    tf32 = ((u + np.uint32(0x0FFF) + ((u >> 13) & 1)) & np.uint32(0xFFFFE000)).view(np.float32)
    assert float(np.max(np.abs(tf32 - x) / np.abs(x))) <= 2.0**-11  # 10 mantissa bits, round to nearest
    assert np.all((tf32.view(np.uint32) & 0x1FFF) == 0)
    a100 = mk.GPUS["a100-40gb"]
    assert a100.bf16_flops / 2 == 156e12 and round(156e12 / 19.5e12) == 8 == round(a100.bf16_flops / 2 / a100.fp32_flops)


def test_gemv_floor_and_loads():
    bytes_ = 14_336 * 4_096 * 2
    assert bytes_ == 117_440_512
    assert round(bytes_ / 3.35e12 * 1e6) == 35 == round(bytes_ / mk.GPUS["h100-sxm"].hbm_bandwidth * 1e6)
    assert 4_096 // (32 * 8) == 16  # 16-byte loads of 8 BF16 values, one warp a row


def test_sort_pass_counts():
    m = 17  # 128,256 pads to 2^17
    assert 2**16 < 128_256 <= 2**17 and m * (m + 1) // 2 == 153
    assert 32 // 8 == 4 and 32 // 2 == 16


def test_tp2_int8_weights():
    w = 7 * 10**9  # one byte each
    assert round(w / 2 / 3.35e12 * 1e3, 1) == 1.0 and round(w / 3.35e12 * 1e3, 1) == 2.1


def test_safetensors_layout():
    head = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    blob = struct.pack("<Q", len(head)) + head + np.array([1.5, -2.0], dtype="<f4").tobytes()
    n = int.from_bytes(blob[:8], "little")
    meta = json.loads(blob[8:8 + n])
    b, e = meta["x"]["data_offsets"]
    assert np.frombuffer(blob[8 + n + b:8 + n + e], dtype="<f4").tolist() == [1.5, -2.0]


def test_expert_parallel_bytes_share():
    E, k = 256, 8  # DeepSeek-V3 routed experts, top-8
    v3 = mk.MODEL_FACTS["deepseek-v3"]
    assert (v3.num_experts, v3.experts_per_token) == (E, k)
    share = {g: 1 - comb(E - E // g, k) / comb(E, k) for g in (8, 32, 64)}  # a2a bytes / all-gather bytes
    assert round(share[8], 2) == 0.66 and round(share[32], 2) == 0.23 and round(share[64], 2) == 0.12
    # 8 GPUs: a token misses a given rank when all 8 experts fall in the other 224
    assert abs(comb(224, 8) / comb(256, 8) - np.prod([(224 - i) / (256 - i) for i in range(8)])) < 1e-12


def test_rdma_translation_entries():
    pool = 60 * 2**30
    assert pool // 4096 == 15_728_640 and pool // 2**21 == 30_720 and pool // 2**30 == 60


def test_aqlm_codebooks_against_shared_memory():
    assert 1 * 2**16 * 8 * 2 == 1_048_576 > 228 * 1024  # 1x16: one 65,536-entry codebook of 8 FP16 values
    assert 2 * 2**8 * 8 * 2 == 8_192 < 228 * 1024  # 2x8
    assert 16 / 8 == 2 == 2 * 8 / 8  # bits a weight, groups of 8


def test_link_numbers():
    assert mk.LINKS["nvlink4"].bytes_per_s / mk.LINKS["ib-ndr"].bytes_per_s == 9
    assert round(16 * 2**20 / 450e9 * 1e6) == 37 and round(16 * 2**20 / 50e9 * 1e6) == 336
