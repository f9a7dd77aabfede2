"""Tests for the drain, offload, per-request cost and d-choices helpers (mha_kit.reliability, mha_kit.tenancy)."""
import pytest

import mha_kit as mk


def test_drain_is_ttft_plus_tokens_times_tpot():
    # 4,096 tokens at 30 ms each after a 0.5 s first token: 0.5 + 122.88 s
    assert mk.drain_seconds(4096, 0.03, 0.5) == pytest.approx(0.5 + 4096 * 0.03)
    with pytest.raises(ValueError, match="max_new_tokens"):
        mk.drain_seconds(0, 0.03)
    with pytest.raises(ValueError, match="tpot_s"):
        mk.drain_seconds(10, -1.0)


def test_offload_sum_and_overlap():
    # 60 GB over PCIe Gen5 x16 (64 GB/s one way) dominates 80 GB of HBM at 3.35 TB/s
    serial = mk.offload_token_seconds(80e9, 3.35e12, 60e9, 64e9)
    assert serial == pytest.approx(80e9 / 3.35e12 + 60e9 / 64e9)
    assert mk.offload_token_seconds(80e9, 3.35e12, 60e9, 64e9, overlap=True) == pytest.approx(60e9 / 64e9)
    assert mk.offload_token_seconds(10e9, 1e12, 0, 64e9) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="offload_bandwidth"):
        mk.offload_token_seconds(1, 1, 1, 0)


def test_request_cost_from_usage_fields():
    # 10,000 prompt tokens, 8,000 cached, 500 out at $3 / $0.30 / $15 per million
    cost = mk.request_cost(10_000, 8_000, 500, input_per_million=3, output_per_million=15,
                           cached_input_per_million=0.3)
    assert cost == pytest.approx((2_000 * 3 + 8_000 * 0.3 + 500 * 15) / 1e6)
    with pytest.raises(ValueError, match="cannot exceed prompt_tokens"):
        mk.request_cost(10, 11, 0, input_per_million=1, output_per_million=1, cached_input_per_million=1)
    with pytest.raises(ValueError, match="completion_tokens"):
        mk.request_cost(10, 0, -1, input_per_million=1, output_per_million=1, cached_input_per_million=1)


def test_two_choices_beat_one():
    # Mitzenmacher 2001: the maximum load falls from ~log n/log log n to ~log log n/log 2
    one = mk.max_load_d_choices(10_000, 10_000, 1, seed=1)
    two = mk.max_load_d_choices(10_000, 10_000, 2, seed=1)
    assert two < one and two <= 4
    assert mk.max_load_d_choices(5, 1, 1) == 5
    with pytest.raises(ValueError, match="cannot exceed n_servers"):
        mk.max_load_d_choices(10, 2, 3)


# Claims of the new sections of serving_reliability and multi_tenant_serving, recomputed from written-out products.
LLAMA3_70B_PARAMS = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) + 2 * 128256 * 8192 + 8192
LLAMA3_8B_PARAMS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 2 * 128256 * 4096 + 4096


def test_chapter_drain_numbers():
    drain = 0.5 + 4096 * 0.030
    assert round(drain) == 123 and 15 + 124 == 139  # "--shutdown-timeout 124, grace >= 139"
    assert round((0.5 + 32768 * 0.030) / 60) == 16  # "about 16 minutes" for a 32k cap


def test_chapter_offload_numbers():
    w = LLAMA3_70B_PARAMS * 2
    assert mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"]) == LLAMA3_70B_PARAMS
    off = w - 75e9
    hbm = mk.GPUS["h100-sxm"].hbm_bandwidth
    pcie_s = 75e9 / hbm + off / 64e9
    cpu_s = 75e9 / hbm + off / (12 * 8 * 6.4e9)
    assert round(off / 1e9) == 66 and f"{pcie_s:.2f}" == "1.06" and round(1e3 * cpu_s) == 130
    assert round(1e3 * w / (2 * hbm)) == 21


def test_chapter_mig_and_cost_numbers():
    kv_per_token = 32 * 2 * 8 * 128 * 2  # layers x (K, V) x kv heads x head dim x bf16 bytes
    w8 = LLAMA3_8B_PARAMS * 2
    assert w8 > 0.9 * 10e9  # does not fit 1g.10gb
    assert f"{(0.9 * 20e9 - w8) / kv_per_token:,.0f}" == "14,797"
    hit = (1_000 * 3.0 + 11_000 * 0.3 + 300 * 15.0) / 1e6
    miss = (12_000 * 3.0 + 300 * 15.0) / 1e6
    assert f"{hit:.4f}" == "0.0108" and f"{miss:.4f}" == "0.0405" and f"{miss / hit:.1f}" == "3.8"


def test_chapter_priority_numbers():
    # M/M/1 wait in service times, rho / (1 - rho): shared FCFS at 0.9 against chat alone at 0.4
    assert round(0.9 / 0.1) == 9 and f"{0.4 / 0.6:.2f}" == "0.67"
