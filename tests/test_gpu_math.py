"""mha_kit.gpu_math: peak rates from per-SM counts, GEMM tile reuse, a warp's softmax."""
import numpy as np
import pytest

import mha_kit as mk


def test_peak_flops_reproduces_the_datasheets():
    # A100 whitepaper: 108 SMs x 1,024 dense FP16 FMA (2,048 FLOPs) per clock x 1,410 MHz boost = 312 TFLOPS
    assert mk.peak_flops(108, 2048, 1.41e9) == pytest.approx(311.87e12, rel=1e-4)
    # A100 FP32: 108 SMs x 64 lanes x 2 FLOPs x 1.41 GHz = 19.5 TFLOPS
    assert mk.peak_flops(108, 128, 1.41e9) == pytest.approx(19.49e12, rel=1e-3)
    # H100 SXM: 132 x 4,096 x 1.83 GHz = 989.4 TFLOPS bf16 dense; 132 x 256 x 1.98 GHz = 66.9 TFLOPS FP32
    assert mk.peak_flops(132, 4096, 1.83e9) == pytest.approx(989.43e12, rel=1e-5)
    assert mk.peak_flops(132, 256, 1.98e9) == pytest.approx(66.9e12, rel=1e-3)


def test_implied_clock_inverts_peak_flops():
    assert mk.implied_clock_hz(989e12, 132, 4096) == pytest.approx(989e12 / (132 * 4096))
    assert mk.implied_clock_hz(mk.peak_flops(7, 96, 1.5e9), 7, 96) == pytest.approx(1.5e9)


def test_gemm_tile_intensity_by_hand():
    assert mk.gemm_tile_intensity(1, 1, 4) == 2 * 1 * 1 / (2 * 4)  # naive fp32: 0.25 FLOP per byte
    assert mk.gemm_tile_intensity(32, 32, 4) == 2 * 32 * 32 / (64 * 4)  # 8.0
    assert mk.gemm_tile_intensity(128, 256, 2) == 2 * 128 * 256 / (384 * 2)


def test_tiled_gemm_bytes_by_hand():
    # 4 x 4 output of 2 x 2 tiles, k = 3, 1 byte: 4 tiles x (2 + 2) x 3 reads + 16 writes
    assert mk.tiled_gemm_bytes(4, 4, 3, 2, 2, 1) == 4 * 4 * 3 + 16
    # naive: every output reads a row of A and a column of B
    assert mk.tiled_gemm_bytes(8, 8, 5, 1, 1, 2) == (64 * 2 * 5 + 64) * 2


def test_warp_softmax_matches_float64_within_fp32_rounding():
    x = np.random.default_rng(0).standard_normal((3, 1000)) * 5
    ref = np.exp(x - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    out = mk.warp_softmax(x)
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_warp_softmax_sums_in_butterfly_order():
    # two lanes, columns [a, b, c, d]: lane 0 sums a + c, lane 1 b + d, then the two are added
    x = np.log(np.array([[1.0, 2.0, 3.0, 4.0]]))
    out = mk.warp_softmax(x, lanes=2)
    np.testing.assert_allclose(out, [[0.1, 0.2, 0.3, 0.4]], rtol=1e-6)
    assert (mk.warp_softmax(np.zeros((1, 5)), lanes=8) == np.float32(0.2)).all()  # padding lanes add nothing


@pytest.mark.parametrize("call, message", [
    (lambda: mk.peak_flops(0, 4096, 1e9), r"^num_sms must be a positive integer, got 0$"),
    (lambda: mk.peak_flops(132, 4096, 0.0), r"^clock_hz must be a positive number, got 0\.0$"),
    (lambda: mk.implied_clock_hz(-1.0, 132, 4096), r"^peak must be a positive number, got -1\.0$"),
    (lambda: mk.gemm_tile_intensity(128, 128, 0), r"^bytes_per_element must be a positive number, got 0$"),
    (lambda: mk.tiled_gemm_bytes(100, 128, 64, 64, 64, 2),
     r"^m and n must be multiples of block_m and block_n, got m=100, n=128, block_m=64, block_n=64$"),
    (lambda: mk.warp_softmax(np.zeros((2, 4)), lanes=12), r"^lanes must be a power of two .* got 12$"),
    (lambda: mk.warp_softmax(np.zeros(4)), r"^x must be 2-D \(rows, cols\), got shape \(4,\)$"),
])
def test_errors_name_the_rule(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_new_record_fields_match_their_sources():
    h100, b200, a100 = mk.GPUS["h100-sxm"], mk.GPUS["b200-hgx"], mk.GPUS["a100-40gb"]
    # H100 whitepaper and CUDA guide: 128 FP32 lanes, 2 x A100's 2,048 tensor FLOPs a clock, 16 MUFU, 50 MB L2
    assert (h100.fp32_lanes_per_sm, h100.tensor_flops_per_clock_per_sm, h100.sfu_per_sm) == (128, 2 * 2048, 16)
    assert (h100.l1_shared_bytes_per_sm, h100.l2_bytes, h100.smem_bytes_per_clock_per_sm) == (256 * 1024, 50 * 2**20, 128)
    assert h100.fp32_flops == 67e12 and "67 TFLOPS FP32" in h100.source
    assert (a100.fp32_flops, a100.fp32_lanes_per_sm, a100.tensor_flops_per_clock_per_sm) == (19.5e12, 64, 2048)
    # HGX B200 page prints 4.5 PFLOPS bf16 with sparsity: dense is half
    assert b200.bf16_flops == 4.5e15 / 2 and b200.hbm_bytes == 180 * 10**9 and b200.fp32_flops == 75e12
    assert b200.tensor_memory_bytes_per_sm == 128 * 512 * 4  # PTX ISA: 128 lanes x 512 columns x 32 bits
    assert b200.num_sms is None  # not published on the page the record cites
    # FlashAttention-4 paper sec. 2: per SM twice Hopper's tensor rate, the same 16 exponentials a clock
    assert (b200.tensor_flops_per_clock_per_sm, b200.sfu_per_sm) == (2 * h100.tensor_flops_per_clock_per_sm, 16)


@pytest.mark.parametrize("field", ["fp32_lanes_per_sm", "sfu_per_sm", "l2_bytes", "tensor_memory_bytes_per_sm"])
def test_new_integer_fields_are_validated(field):
    base = dict(name="toy", title="Toy", cite="nvidiah100", source="made up", hbm_bandwidth=1e12, bf16_flops=1e14,
                hbm_bytes=10**9)
    with pytest.raises(ValueError, match=rf"^{field} must be a positive integer, got 0$"):
        mk.Accelerator(**base, **{field: 0})
    with pytest.raises(ValueError, match=r"^fp32_flops must be a positive number, got -1\.0$"):
        mk.Accelerator(**base, fp32_flops=-1.0)
