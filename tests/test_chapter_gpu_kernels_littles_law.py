"""gpu_kernels-littles-law: requests and bytes that must be in flight to hide memory latency (Little's law,
L = lambda W), recomputed with the products written out: the interview case (100 cycles, one request every
4 cycles), and the H100 SXM from its datasheet rates (3.35 TB/s HBM3, 989 TFLOPS dense bf16 over 132 SMs at
4,096 tensor FLOPs a clock each) and a measured 700-cycle HBM latency."""
import pytest

import mha_kit as mk

BW, PEAK, SMS, TC_PER_CLOCK, HBM_CYCLES = 3.35e12, 989e12, 132, 4096, 700


def _per_sm_bytes():
    clock = PEAK / (TC_PER_CLOCK * SMS)  # about 1.83 GHz
    return BW / clock * HBM_CYCLES / SMS


def test_interview_case_is_25_not_100():
    assert 100 // 4 == 25
    assert 100 * (1 / 4) == pytest.approx(25)


def test_record_matches_datasheet():
    h100 = mk.GPUS["h100-sxm"]
    assert (h100.hbm_bandwidth, h100.bf16_flops, h100.num_sms) == (BW, PEAK, SMS)
    assert h100.tensor_flops_per_clock_per_sm == TC_PER_CLOCK
    assert h100.max_warps_per_sm == 64


def test_bytes_in_flight():
    clock = PEAK / (TC_PER_CLOCK * SMS)
    assert clock == pytest.approx(1.829e9, rel=1e-3)
    chip = BW / clock * HBM_CYCLES
    assert chip == pytest.approx(1.282e6, rel=1e-3)  # 1,831 B a cycle x 700 cycles, printed as 1.2 MiB
    assert _per_sm_bytes() == pytest.approx(9712, rel=1e-3)  # printed as 9.5 KiB


def test_warps_needed_per_load_width():
    per_sm = _per_sm_bytes()
    assert round(per_sm / (32 * 4)) == 76  # more than the 64 warps an SM holds
    assert round(per_sm / (32 * 16)) == 19
    kv_stage = 2 * 128 * 128 * 2  # one K and one V tile of 128 rows, head dim 128, bf16
    assert kv_stage == 64 * 1024
    assert kv_stage / per_sm == pytest.approx(6.75, abs=0.01)
