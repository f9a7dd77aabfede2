"""The numbers of the sections on norm epsilons against fp16, summation error, training activations, Vaswani's
table 3, K2VV and Fast-dLLM, retries and backoff, a VLM's cross-attention cache, Transformer-XL and embedding
indexes, recomputed independently (softmax_numerics, kv_cache_basics, why_several_heads, weight_quantization,
serving_operations, cross_and_masked_attention, long_context_structure)."""
import math

import numpy as np
import pytest


def test_norm_epsilon_gain_cap_and_fp16():
    assert f"{1 / math.sqrt(1e-5):,.0f}" == "316" and f"{1 / math.sqrt(1e-6):,.0f}" == "1,000"
    tiny = 2.0 ** -14  # float16's smallest normal: exponent bias 15, smallest exponent 1 - 15
    assert float(np.finfo(np.float16).tiny) == tiny and 1e-5 < tiny and 1e-6 < tiny


def test_summation_bounds_and_recursive_is_worse():
    u, n = 2.0 ** -24, 10 ** 6
    assert math.ceil(math.log2(n)) == 20  # pairwise: twenty rounding levels for a million terms
    assert (n - 1) * u > 0.05 and 20 * u < 2e-6
    x = (0.1 + 0.01 * np.random.default_rng(0).standard_normal(n)).astype(np.float32)
    ref = math.fsum(x.astype(np.float64).tolist())
    total = np.float32(0)
    for block in np.split(x, 1000):  # a left-to-right float32 running total, in blocks of cumsum
        total = np.cumsum(np.concatenate(([total], block)), dtype=np.float32)[-1]
    assert abs(float(total) - ref) / ref > 1e-6  # the printed 8e-06
    assert abs(float(np.sum(x, dtype=np.float64)) - ref) / ref < 1e-12


def test_training_activation_numbers_llama3_8b():
    s, h, a, layers = 8192, 4096, 32, 32
    gib = 2 ** 30
    assert round(layers * (34 * s * h + 5 * a * s * s) / gib) == 354
    assert round(layers * 34 * s * h / gib) == 34 and round(layers * 2 * s * h / gib) == 2


def test_vaswani_table3_gap():
    assert round(25.8 - 24.9, 1) == 0.9 and 512 // 32 == 16


def test_k2vv_spread_and_fastdllm_speedup():
    assert round(100.00 - 83.05) == 17
    assert f"{54.4 / 6.73:.1f}" == "8.1"  # the README's 8.1x
    assert 256 * (512 + 256) // (512 + 256) == 256


def test_retry_amplification_and_backoff():
    assert (1 + 3) ** 3 == 64
    assert [min(0.5 * 2 ** k, 8.0) for k in range(6)] == [0.5, 1, 2, 4, 8, 8]


def test_vlm_cross_attention_cache():
    per_token_layer = 2 * 8 * 128 * 2  # K and V, 8 KV heads, head dim 128, bf16
    assert 1600 * per_token_layer * 32 == 200 * 2 ** 20
    assert 1600 * per_token_layer * 8 == 50 * 2 ** 20


def test_transformer_xl_counts():
    assert 16 * 512 == 8192 and (10_000 * 512) // 10_000 == 512


def test_embedding_index_sizes():
    assert 10_000_000 * 1024 * 4 / 1e9 == pytest.approx(40.96)
    assert 10_000_000 * 1024 / 8 / 1e9 == pytest.approx(1.28)
