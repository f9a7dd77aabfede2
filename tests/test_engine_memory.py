"""mha_kit.engine_memory and mha_kit.sinusoid_layouts against their primary sources.

* block_activation_bytes: TensorRT-LLM docs/source/reference/memory.md, "Activation size" item 3 (TP
  splits some tensors, a PP stage holds full-size ones) and item 1 (activation ~ max input tokens x a
  constant); worked by hand for a small block.
* residual_window_cache_bytes: transformers cache_utils.py, QuantizedLayer.update (window of at most
  residual_length - 1 full-precision tokens).
* timing_signal_concat: tensor2tensor common_attention.py get_timing_signal_1d (v1.15.7).
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
