"""gpu_kernels-littles-law: requests and bytes that must be in flight to hide memory latency (Little's law,
L = lambda W), recomputed with the products written out: the interview case (100 cycles, one request every
4 cycles), and the H100 SXM from its datasheet rates (3.35 TB/s HBM3, 989 TFLOPS dense bf16 over 132 SMs at
4,096 tensor FLOPs a clock each) and a measured 700-cycle HBM latency; the clock at which 64 warps of
scalar loads would suffice; FlashAttention-3's causal and non-causal K/V stages (hopper/tile_size.h)."""
import pytest

import mha_kit as mk

BW, PEAK, SMS, TC_PER_CLOCK, HBM_CYCLES, MAX_WARPS = 3.35e12, 989e12, 132, 4096, 700, 64


def _per_sm_bytes(clock=PEAK / (TC_PER_CLOCK * SMS)):
    return BW / clock * HBM_CYCLES / SMS


def test_record_matches_datasheet():
    h100 = mk.GPUS["h100-sxm"]
    assert (h100.hbm_bandwidth, h100.bf16_flops, h100.num_sms) == (BW, PEAK, SMS)
    assert h100.tensor_flops_per_clock_per_sm == TC_PER_CLOCK
    assert h100.max_warps_per_sm == MAX_WARPS


def test_bytes_in_flight():
    clock = PEAK / (TC_PER_CLOCK * SMS)
    assert clock == pytest.approx(1.829e9, rel=1e-3)
    assert HBM_CYCLES / clock * 1e9 == pytest.approx(383, abs=0.5)  # printed as 383 ns
    chip = BW / clock * HBM_CYCLES
    assert chip == pytest.approx(1.282e6, rel=1e-3)  # 1,831 B a cycle x 700 cycles, printed as 1.2 MiB
    assert _per_sm_bytes() == pytest.approx(9712, rel=1e-3)  # printed as 9.5 KiB


def test_warps_needed_per_load_width():
    per_sm = _per_sm_bytes()
    assert round(per_sm / (32 * 4)) == 76  # more than the 64 warps an SM holds
    assert round(per_sm / (32 * 16)) == 19


def test_break_even_clock_and_clock_range():
    # 64 warps x 32 lanes x 4 B = 8,192 B per SM; 8,192 x 132 = BW x 700 / f  =>  f = 2.17 GHz
    f_even = BW * HBM_CYCLES / (SMS * 32 * 4 * MAX_WARPS)
    assert f_even == pytest.approx(2.1686e9, rel=1e-4)
    for ghz in (1.755, 1.83, 1.98):  # any clock below f_even needs more warps than an SM holds
        assert _per_sm_bytes(ghz * 1e9) / (32 * 4) > MAX_WARPS


def test_fa3_kv_stages():
    per_sm = _per_sm_bytes()
    causal, non_causal = 2 * 128 * 128 * 2, 2 * 176 * 128 * 2  # K and V tiles, head dim 128, bf16
    assert (causal, non_causal) == (64 * 1024, 88 * 1024)
    assert causal / per_sm == pytest.approx(6.75, abs=0.01)
    assert non_causal / per_sm == pytest.approx(9.28, abs=0.01)
