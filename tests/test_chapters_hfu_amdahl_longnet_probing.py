"""Prose claims on zero-point row sums, HFU, Amdahl with an FP8 cache, cross-layer sharing, LongNet, linear probing
and MBR, recomputed independently of the notebooks."""
import pytest

import mha_kit as mk


def test_zero_point_row_sum_share():
    # weight_quantization-zero-point-gemm: the activation row sums are M*K adds against M*K*N MACs
    K = N = 8192  # Llama 3 70B d_model
    M = 4096
    assert (M * K) / (M * K * N) == 1 / 8192


def test_hfu_ratios():
    # deployment_plan-hfu: 6N useful of 8N executed; speculative k = 4 at acceptance 0.7
    assert 6 / 8 == 0.75
    alpha, k = 0.7, 4
    kept = sum(alpha**i for i in range(k + 1))  # Leviathan et al.: (1 - alpha^(k+1)) / (1 - alpha)
    assert kept == pytest.approx(2.7731)
    assert round(kept / (k + 1), 2) == 0.55
    assert round(33 / 40, 2) == 0.82


def test_amdahl_fp8_cache():
    # deployment_plan-amdahl: Llama 3 8B, 8K context: KV 128 KiB per token, weights 16.06 GB
    kv_seq = 32 * 8 * 128 * 2 * 2 * 8192  # layers * kv heads * head dim * (K, V) * bf16 bytes * tokens
    weights = 16060522496
    share = 32 * kv_seq / (32 * kv_seq + weights)
    assert round(share, 2) == 0.68
    assert 1 / ((1 - share) + share / 2) == pytest.approx(1.52, abs=0.005)
    assert 1 / (1 - share) == pytest.approx(3.14, abs=0.005)
    assert 1 / (0.7 + 0.3 / 2) == pytest.approx(1.18, abs=0.005)


def test_cross_layer_product():
    # beyond_kv_cache-cross-layer: 8x (MQA) * window factor * 2 (sharing) at 8K
    window_factor = 1 / 6 + 5 / 6 * 1024 / 8192
    assert round(8 / window_factor * 2) == 59


def test_longnet_ratio():
    # long_context_structure-longnet: sum_i 2 N d w_i / r_i^2 against 2 N^2 d
    n = 2**20
    dilated = sum(2 * n * 2048 * 2**i / 4**i for i in range(5))
    assert round(2 * n * n / dilated) == 264


def test_linear_probing_numbers():
    # cuda_basics-hash-table: Knuth's estimates at load 0.9
    assert 0.5 * (1 + 1 / 0.1**2) == pytest.approx(50.5)
    assert mk.linear_probe_expected_probes(0.9)[1] == pytest.approx(50.5)


def test_mbr_calls():
    assert 64 * 63 == 4032
