"""mha_kit.engine_memory and mha_kit.sinusoid_layouts against their primary sources.

* block_activation_bytes: TensorRT-LLM docs/source/reference/memory.md, "Activation size" item 3 (TP
  splits some tensors, a PP stage holds full-size ones) and item 1 (activation ~ max input tokens x a
  constant); worked by hand for a small block.
* residual_window_cache_bytes: transformers cache_utils.py, QuantizedLayer.update (window of at most
  residual_length - 1 full-precision tokens).
* timing_signal_concat: tensor2tensor common_attention.py get_timing_signal_1d (v1.15.7).
* engine_kv_pool: SGLang model_runner_kv_cache_mixin.py profile_max_num_token (rest_memory =
  available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static), the total being the memory free
  before the weights load); TensorRT-LLM _util.py KvCacheCreator._cal_max_memory ((total - peak +
  allocated_bytes) * fraction, the peak including the estimation run's temporary cache); vLLM
  determine_available_memory (requested = utilization * total, minus weights and the profiled peak).
"""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_block_activation_hand_worked():
    # d = 8, qkv = 24, d_ff = 32, 3 tokens, bf16: 2 * 3 * (8 + 24 + 64) = 576 bytes
    assert mk.block_activation_bytes(3, 8, 24, 32) == 576
    # tp = 4 splits qkv and the two intermediates, not the residual stream: 2 * 3 * (8 + 6 + 16)
    assert mk.block_activation_bytes(3, 8, 24, 32, tp=4) == 180


def test_block_activation_tp_smaller_than_pp_and_linear_in_tokens():
    f = mk.MODEL_FACTS["llama-3-70b"]
    c = f.config
    qkv = (64 + 2 * 8) * 128
    assert qkv == (c.num_heads + 2 * c.num_kv_heads) * c.head_dim
    pp = mk.block_activation_bytes(8192, 8192, qkv, 28672, tp=1)
    assert pp == 2 * 8192 * (8192 + 10240 + 2 * 28672)
    tp4 = mk.block_activation_bytes(8192, 8192, qkv, 28672, tp=4)
    assert tp4 == 2 * 8192 * (8192 + 2560 + 14336)
    assert 1 < pp / tp4 < 4  # the replicated residual stream keeps the gain below t
    # TensorRT-LLM FAQ 4: max_batch_size 32 against 2 at the same max_input_len, "almost 16x"
    assert mk.block_activation_bytes(32 * 1024, 8192, qkv, 28672) == 16 * mk.block_activation_bytes(2 * 1024, 8192, qkv, 28672)


def test_block_activation_errors():
    with pytest.raises(ValueError, match="must divide"):
        mk.block_activation_bytes(4, 8, 24, 30, tp=4)
    with pytest.raises(ValueError, match="tokens"):
        mk.block_activation_bytes(0, 8, 24, 32)


def test_residual_window_cache_bytes():
    # 1000 tokens of 10 elements, 4 bits, window 128: 127 tokens bf16, 873 at half a byte
    assert mk.residual_window_cache_bytes(1000, 10, 4, residual_length=128) == 127 * 10 * 2 + 873 * 10 // 2
    # shorter than the window: all full precision
    assert mk.residual_window_cache_bytes(50, 10, 2) == 50 * 10 * 2
    # 2 bits, odd element count rounds up to whole bytes
    assert mk.residual_window_cache_bytes(130, 3, 2, residual_length=128) == 127 * 3 * 2 + math.ceil(3 * 3 * 2 / 8)
    with pytest.raises(ValueError, match="nbits"):
        mk.residual_window_cache_bytes(10, 10, 3)


def test_timing_signal_concat_matches_tensor2tensor_formula():
    d, n = 16, 40
    t = mk.timing_signal_concat(n, d)
    half = d // 2
    inc = math.log(1.0e4 / 1.0) / (half - 1)  # log_timescale_increment
    inv = np.exp(-np.arange(half) * inc)
    scaled = np.arange(n)[:, None] * inv[None, :]
    np.testing.assert_allclose(t, np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1))
    # the slowest timescale is exactly max_timescale; the paper's stops at 10000**((d-2)/d)
    assert math.isclose(inv[-1], 1e-4)
    paper = mk.sinusoidal_positions(2, d)
    assert math.isclose(np.arcsin(paper[1, d - 2]), 10000.0 ** (-(d - 2) / d))
    # position 0: sines 0, cosines 1
    assert np.all(t[0, :half] == 0) and np.all(t[0, half:] == 1)
    with pytest.raises(ValueError, match="even"):
        mk.timing_signal_concat(4, 7)
    with pytest.raises(ValueError, match="min_timescale"):
        mk.timing_signal_concat(4, 8, min_timescale=10.0, max_timescale=1.0)


GIB = 2**30


def test_engine_kv_pool_sglang_matches_profile_max_num_token():
    # SGLang works in GiB: free before load 79 GiB, weights 15 GiB, f = 0.88
    total_gpu_memory, weights, f = 79 * GIB, 15 * GIB, 0.88
    available_gpu_memory = total_gpu_memory - weights  # measured after the weights load
    rest_memory = available_gpu_memory - total_gpu_memory * (1 - f)  # profile_max_num_token
    got = mk.engine_kv_pool("sglang", f, total_gpu_memory, weights, runtime_bytes=6 * GIB)
    assert abs(got.pool_bytes - rest_memory) <= 1  # int() of f * base
    # the activations are not subtracted: the same pool whatever the runtime needs ...
    assert got.pool_bytes == mk.engine_kv_pool("sglang", f, total_gpu_memory, weights, 0).pool_bytes
    # ... and they must fit in (1 - f) * base: 9.48 GiB here, 3.48 GiB spare after 6 GiB
    assert abs(got.spare_bytes - (total_gpu_memory * (1 - f) - 6 * GIB)) <= 1
    # vLLM's 0.9 copied over with a 10 GiB runtime: 7.9 GiB outside the fraction, out of memory
    assert mk.engine_kv_pool("sglang", 0.9, total_gpu_memory, weights, 10 * GIB).spare_bytes < 0


def test_engine_kv_pool_vllm_and_tensorrt_llm():
    total, weights, act, f = 80 * 10**9, 16 * 10**9, 4 * 10**9, 0.9
    vllm = mk.engine_kv_pool("vllm", f, total, weights, act)
    assert vllm.pool_bytes == 72 * 10**9 - weights - act  # requested = f * total, minus what runs
    assert vllm.spare_bytes == 8 * 10**9  # (1 - f) of the total, whatever the runtime
    # TensorRT-LLM: peak = weights + activations + the estimation run's temporary cache, added back
    temp_cache = 3 * 10**9
    peak = weights + act + temp_cache
    trt = mk.engine_kv_pool("tensorrt-llm", f, total, weights, act)
    assert trt.pool_bytes == int((total - peak + temp_cache) * f) == 54 * 10**9
    assert trt.spare_bytes == 6 * 10**9  # a tenth of what was free
    # at 0.5 the readings part: vLLM's process holds half the GPU, TensorRT-LLM's well over half
    assert total - mk.engine_kv_pool("vllm", 0.5, total, weights, act).spare_bytes == total // 2
    assert total - mk.engine_kv_pool("tensorrt-llm", 0.5, total, weights, act).spare_bytes == 50 * 10**9


def test_engine_kv_pool_errors():
    with pytest.raises(ValueError, match="engine must be one of"):
        mk.engine_kv_pool("tgi", 0.9, 80 * 10**9, 16 * 10**9, 0)
    with pytest.raises(ValueError, match="fraction"):
        mk.engine_kv_pool("vllm", 1.2, 80 * 10**9, 16 * 10**9, 0)
    with pytest.raises(ValueError, match="runtime_bytes"):
        mk.engine_kv_pool("vllm", 0.9, 80 * 10**9, 16 * 10**9, -1)
    with pytest.raises(ValueError, match="weight_bytes"):
        mk.engine_kv_pool("vllm", 0.9, 80 * 10**9, 0, 0)
    with pytest.raises(ValueError, match="leave no KV pool"):
        mk.engine_kv_pool("sglang", 0.2, 80 * 10**9, 16 * 10**9, 0)
