"""gpu_kernels-wide-gemm: the whole-matmul roofline of a (m x 512)(512 x 2^20) bf16 GEMM on an A100 40GB
and the 72-layer stack, recomputed from the datasheet rates (NVIDIA A100 datasheet: 312 TFLOPS bf16 dense,
1,555 GB/s, 40 GB; PCI-SIG: PCIe 4.0 16 GT/s a lane) with the products written out."""
import pytest

import mha_kit as mk

PEAK, BW, HBM = 312e12, 1.555e12, 40e9
K, N, B = 512, 2**20, 2


def _layer(m):
    flops = 2 * m * K * N
    nbytes = B * (m * K + K * N + m * N)  # read activation and weight, write the output
    return flops, nbytes, max(flops / PEAK, nbytes / BW)


def test_record_matches_datasheet():
    a100 = mk.GPUS["a100-40gb"]
    assert (a100.bf16_flops, a100.hbm_bandwidth, a100.hbm_bytes) == (PEAK, BW, HBM)


def test_crossing_near_330():
    ridge = PEAK / BW
    assert round(ridge) == 201
    flops, nbytes, _ = _layer(329)
    assert flops / nbytes < ridge
    flops, nbytes, _ = _layer(331)
    assert flops / nbytes > ridge


def test_times_and_output_size():
    assert _layer(2)[2] * 1e3 == pytest.approx(0.6932, abs=1e-4)  # 2 * (2^29 + 2^21 + 1024) bytes / 1.555e12
    assert _layer(8192)[2] * 1e3 == pytest.approx(28.19, abs=0.01)  # 2 * 8192 * 512 * 2^20 / 312e12
    assert B * 8192 * N == 16 * 2**30
    assert _layer(10**6)[0] / _layer(10**6)[1] < K  # intensity never passes k


def test_stack_does_not_fit_and_streams_at_pcie():
    weights = 72 * K * N * B
    assert weights == 72 * 2**30 and weights > HBM and -(-weights // HBM) == 2
    pcie = 16 * 16e9 * 128 / 130 / 8  # 16 lanes x 16 GT/s, 128b/130b encoding, bits to bytes: ~31.5 GB/s
    copy = K * N * B / pcie
    assert copy > _layer(8192)[2]  # the copy outlasts even the largest GEMM: copy-bound
    assert 72 * copy == pytest.approx(2.42, rel=0.03)  # the chapter uses the 8 GB/s-per-x4 record: 32 GB/s
    assert 2 * K * N * B + B * 8192 * (N + K) < HBM  # double-buffered weights + widest activations fit
