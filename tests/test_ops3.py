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
