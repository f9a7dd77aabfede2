"""mha_kit.fleet_ops against its sources: Databricks' MBU, PaLM's MFU, Clipper's AIMD rule, halving search."""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_mbu_databricks_worked_example():
    # Databricks (2023): a 7B model in 16 bits (14 GB) at 14 ms per token moves 1 TB/s; on a 2 TB/s A100 that is 50%.
    assert mk.bandwidth_utilisation(14e9, 0.014, 2e12) == pytest.approx(0.5)


def test_mfu_counts_model_flops():
    # 8B parameters, 2 FLOPs each per token, 10,000 tokens/s on 989 TFLOP/s.
    assert mk.flops_utilisation(2 * 8e9 * 10_000, 1.0, 989e12) == pytest.approx(0.16178, rel=1e-4)
    with pytest.raises(ValueError, match="step_s must be a positive"):
        mk.flops_utilisation(1.0, 0.0, 1.0)


def test_aimd_clipper_rule():
    # Latency 0 + 0.01 * b against 0.1 s: grows by one to 10 (0.1 is not over), then stays at the target.
    b, lat = mk.aimd_batch_trace(np.zeros(12), 0.01, 0.1)
    assert list(b[:10]) == list(range(1, 11)) and b[-1] == 10
    # A step over the target cuts the cap by 10%, floored.
    b, _ = mk.aimd_batch_trace([0.0, 0.5, 0.0], 0.01, 0.1, start=20)
    assert list(b) == [20, 18, 16]  # 0.2 s > 0.1: floor(18.0); 0.68 s > 0.1: floor(16.2)
    # Hysteresis: no increase inside the band (1 - h) * target.
    b, _ = mk.aimd_batch_trace(np.zeros(3), 0.01, 0.1, start=9, hysteresis=0.2)
    assert list(b) == [9, 9, 9]
    with pytest.raises(ValueError, match="backoff"):
        mk.aimd_batch_trace([0.0], 0.01, 0.1, backoff=1.0)
    with pytest.raises(ValueError, match="1-D"):
        mk.aimd_batch_trace([[0.0]], 0.01, 0.1)


def test_edge_ceiling_and_replays():
    rate, per_joule = mk.edge_decode_ceiling(4.5e9, 204.8e9, 30)
    assert rate == pytest.approx(204.8 / 4.5) and per_joule == pytest.approx(204.8 / 4.5 / 30)
    assert [mk.isolation_replays(n) for n in (1, 2, 100, 128, 129)] == [0, 1, 7, 7, 8]
    with pytest.raises(ValueError, match="watts"):
        mk.edge_decode_ceiling(1.0, 1.0, -3)


def test_batched_early_exit():
    assert mk.batched_early_exit_layers(0.8, 12, 40, 1) == pytest.approx(40 - 28 * 0.8)
    assert mk.batched_early_exit_layers(0.8, 12, 40, 32) == pytest.approx(40 - 28 * 0.8**32)
    with pytest.raises(ValueError, match="at most num_layers"):
        mk.batched_early_exit_layers(0.5, 41, 40, 1)
    with pytest.raises(ValueError, match="probability"):
        mk.batched_early_exit_layers(1.5, 12, 40, 1)


def test_weight_pull():
    # 50 nodes x 140 GB from a 25 GB/s store: 280 s; peer to peer: 140/12.5 + 49 chunks of 256 MiB at 12.5 GB/s.
    assert mk.weight_pull_seconds(50, 140e9, 25e9, 12.5e9) == pytest.approx(280.0)
    p2p = mk.weight_pull_seconds(50, 140e9, 25e9, 12.5e9, peer_to_peer=True)
    assert p2p == pytest.approx(11.2 + 49 * 256 * 2**20 / 12.5e9)
    assert mk.weight_pull_seconds(1, 140e9, 25e9, 12.5e9) == pytest.approx(11.2)
    with pytest.raises(ValueError, match="nodes"):
        mk.weight_pull_seconds(0, 1.0, 1.0, 1.0)
    assert math.isfinite(p2p)
