"""Tests of the unseen3 additions: typical_mask, mirostat_v2_step, cfg_logits, token_healing_mask
(mha_kit.sampling), pipelined_time (mha_kit.gpu_kernels), and the key numbers of the new sections
of decoding_sampling, softmax_numerics and gpu_kernels, recomputed independently."""
import math

import numpy as np
import pytest

import mha_kit as mk


def _softmax(z):
    e = np.exp(z - np.max(z))
    return e / e.sum()


def test_typical_mask_keeps_tokens_closest_to_entropy():
    # Meister et al. §4: one favourite among seven equals; its surprise is far below the entropy
    z = np.array([[2.0] + [1.0] * 7])
    p = _softmax(z[0])
    h = -(p * np.log(p)).sum()
    assert abs(-np.log(p[0]) - h) > abs(-np.log(p[1]) - h)  # the favourite is the least typical
    kept = np.isfinite(mk.typical_mask(z, 0.7))[0]
    assert kept.tolist() == [False] + [True] * 7  # the seven others reach 7 * p[1] >= 0.7
    assert np.isfinite(mk.typical_mask(z, 1.0)).all()


def test_typical_mask_errors():
    with pytest.raises(ValueError, match="mass must lie in"):
        mk.typical_mask(np.zeros((1, 3)), 0.0)
    with pytest.raises(ValueError, match=r"shape \(b, V\)"):
        mk.typical_mask(np.zeros(3), 0.5)


def test_mirostat_v2_step_by_hand():
    # llama.cpp llama_sampler_mirostat_v2_apply: truncate surprise > mu, renormalise, mu -= eta * (s - tau)
    p = np.array([0.5, 0.25, 0.125, 0.125])
    logits = np.log(p)
    tok, s, mu, kept = mk.mirostat_v2_step(logits, mu=2.0, tau=1.5, eta=0.1, u=0.9)
    assert kept == 2  # surprises 1, 2, 3, 3 bits; mu = 2 keeps the first two
    assert tok == 1  # q = (2/3, 1/3): u = 0.9 falls in the second
    assert math.isclose(s, -math.log2(1 / 3))
    assert math.isclose(mu, 2.0 - 0.1 * (-math.log2(1 / 3) - 1.5))
    assert mk.mirostat_v2_step(logits, mu=0.1, tau=1.5, eta=0.1, u=0.5)[3] == 1  # keeps at least the top


def test_mirostat_v2_step_errors():
    with pytest.raises(ValueError, match="eta > 0"):
        mk.mirostat_v2_step(np.zeros(3), 2.0, 1.0, 0.0, 0.5)
    with pytest.raises(ValueError, match="u < 1"):
        mk.mirostat_v2_step(np.zeros(3), 2.0, 1.0, 0.1, 1.0)


def test_cfg_logits_formula():
    cond, uncond = np.array([[1.0, 3.0]]), np.array([[2.0, 1.0]])
    assert np.array_equal(mk.cfg_logits(cond, uncond, 1.0), cond)
    assert np.array_equal(mk.cfg_logits(cond, uncond, 0.0), uncond)
    assert np.allclose(mk.cfg_logits(cond, uncond, 1.5), [[0.5, 4.0]])  # 2 + 1.5 (1 - 2), 1 + 1.5 (3 - 1)
    with pytest.raises(ValueError, match="scale >= 0"):
        mk.cfg_logits(cond, uncond, -1.0)
    with pytest.raises(ValueError, match="one shape"):
        mk.cfg_logits(cond, np.zeros((1, 3)), 1.0)


def test_token_healing_mask():
    vocab = ["http", ":", "://", "//", ":-"]
    assert mk.token_healing_mask(vocab, ":").tolist() == [False, True, True, False, True]
    with pytest.raises(ValueError, match="non-empty"):
        mk.token_healing_mask(vocab, "")


def test_pipelined_time():
    assert mk.pipelined_time(2.0, 1.0, 3) == (9.0, 7.0)  # 2 + 2 * 2 + 1
    assert mk.pipelined_time(1.0, 1.0, 1) == (2.0, 2.0)
    with pytest.raises(ValueError, match="stages >= 1"):
        mk.pipelined_time(1.0, 1.0, 0)
    with pytest.raises(ValueError, match="times >= 0"):
        mk.pipelined_time(-1.0, 1.0, 2)


def test_chapter_logits_oom_numbers():
    # fp32 logits (B, T, V) for Llama 3 8B, T = 8192, V = 128,256: 4 B T V bytes
    assert 2 * 8192 * 128_256 * 4 == 8_405_385_216
    kv = 2 * 8 * 128 * 2 * 32  # K and V, 8 KV heads, head dim 128, bf16, 32 layers
    assert mk.kv_cache_bytes_per_token(mk.get_model_facts("llama-3-8b").config) == kv
    weights = mk.dense_decoder_params(mk.get_model_facts("llama-3-8b")) * 2
    b1 = weights + 8192 * kv + 8192 * 128_256 * (2 + 4)
    b2 = weights + 2 * 8192 * kv + 2 * 8192 * 128_256 * (2 + 4)
    assert b1 < 24e9 < b2


def test_chapter_fp16_square_overflows_above_256():
    assert 256.0 ** 2 > 65504 > 255.0 ** 2
    assert np.isinf(mk.round_to_format(np.array([2000.0 ** 2]), "fp16")).all()


def test_chapter_stream_and_launch_numbers():
    copy = 32768 * 131072 / 32 / 64e9  # one layer's KV of a 32K prefix over PCIe Gen5, 64 GB/s
    assert math.isclose(copy, 2.097152e-3)
    gaps = 32 * 12 * 5e-6  # layers x kernels x launch
    assert math.isclose(gaps, 1.92e-3)
    buffers = 128 * 8 * 7168 * (1 + 2)  # DeepSeek-V3 dispatch FP8 + combine bf16, 128 tokens, top-8
    assert math.isclose(2 * buffers / 3.35e12 * 1e6, 13.1, abs_tol=0.05)
