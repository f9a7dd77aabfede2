"""gpu_kernels-wide-gemm, second reading: the memory-bound time rises with the output write, the stack's
activations at m = 8192 need four GPUs, and the stream at the raw PCIe rate and at a measured pinned copy.

Rates: NVIDIA A100 datasheet (312 TFLOPS bf16 dense, 1,555 GB/s, 40 GB), PCI-SIG (16 GT/s a lane,
128b/130b), NVIDIA/nvbandwidth issue #42 (25.13 GB/s host-to-device, A100-SXM4-40GB, 1 GiB buffers).
"""
import pytest

PEAK, BW, HBM = 312e12, 1.555e12, 40e9
K, N, B, LAYERS = 512, 2**20, 2, 72


def _time(m):
    return max(2 * m * K * N / PEAK, B * (m * K + K * N + m * N) / BW)


def _crossing():
    ridge = PEAK / BW
    return ridge * B * K * N / (2 * K * N - ridge * B * (K + N))


def test_memory_bound_time_rises_with_the_output_write():
    m = _crossing()
    assert f"{m:.0f}" == "330"
    assert f"{_time(2) * 1e3:.2f}" == "0.69" and f"{_time(m) * 1e3:.2f}" == "1.14"
    assert f"{_time(m) / _time(2) - 1:.0%}" == "64%"
    assert N * B == 2 * 2**20  # each row of output adds 2 MiB
    assert round(m / 2) == 165  # FLOPs grow with m


def test_sharded_stack_needs_four_gpus_at_8192():
    act = B * 8192 * (N + K)  # one layer's input and output
    assert B * 8192 * N == 16 * 2**30
    two = LAYERS // 2 * K * N * B
    assert two == 36 * 2**30 and f"{(two + act) / 1e9:.1f}" == "55.8" and two + act > HBM
    assert (HBM - two) // (B * (N + K)) == 641
    four = LAYERS // 4 * K * N * B
    assert four == 18 * 2**30 and f"{(four + act) / 1e9:.1f}" == "36.5" and four + act < HBM
    assert (HBM - four) // (B * (N + K)) == 9852


def test_stream_at_raw_and_measured_pcie():
    weight = K * N * B
    raw = 16 * 16e9 / 8  # 16 lanes x 16 GT/s, bits to bytes, before encoding
    assert raw == 32e9 and f"{raw * 128 / 130 / 1e9:.1f}" == "31.5"
    assert f"{LAYERS * max(_time(8192), weight / raw):.2f}" == "2.42"
    assert f"{LAYERS * max(_time(8192), weight / 25.13e9):.2f}" == "3.08"
    assert weight / 25.13e9 > _time(8192)  # still copy-bound at the measured rate
    assert LAYERS * max(_time(128), weight / 25.13e9) == pytest.approx(3.08, abs=0.005)
