"""Tests for flip_rate, kl_divergence, ternary_quantize and ternary_matvec (mha_kit.weight_quant),
and the numbers the weight_quantization chapter's sections on quality, kept layers, BitNet and
service workloads quote, recomputed independently."""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_flip_rate_counts_changed_argmax():
    ref = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0], [1.0, 0.5, 0.0]])
    test = np.array([[0.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.5, 1.0]])
    assert mk.flip_rate(ref, test) == 0.5  # rows 1 and 3 change their top token
    assert mk.flip_rate(ref, ref) == 0.0


def test_kl_divergence_matches_the_definition():
    p_logits = np.log(np.array([[0.5, 0.25, 0.25]]))
    q_logits = np.log(np.array([[0.25, 0.5, 0.25]]))
    by_hand = 0.5 * math.log(0.5 / 0.25) + 0.25 * math.log(0.25 / 0.5) + 0.25 * math.log(1.0)
    assert mk.kl_divergence(p_logits, q_logits) == pytest.approx(by_hand, rel=1e-12)
    assert mk.kl_divergence(p_logits, p_logits + 7.0) == pytest.approx(0.0, abs=1e-15)  # shift-invariant
    assert mk.kl_divergence(q_logits, p_logits) >= 0


@pytest.mark.parametrize("fn", [mk.flip_rate, mk.kl_divergence])
def test_logit_shapes_must_agree(fn):
    with pytest.raises(ValueError, match="logits must both be"):
        fn(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="logits must both be"):
        fn(np.zeros(3), np.zeros(3))


def test_ternary_quantize_is_absmean_roundclip():
    w = np.array([[0.1, -0.4, 2.0], [0.0, 0.9, -3.0]])
    gamma = np.mean(np.abs(w))  # 6.4 / 6
    codes, g = mk.ternary_quantize(w)
    assert g == pytest.approx(gamma)
    expected = np.clip(np.round(w / (gamma + 1e-6)), -1, 1)  # arXiv:2402.17764 eq. 1-3
    assert codes.dtype == np.int8
    np.testing.assert_array_equal(codes, expected.astype(np.int8))
    np.testing.assert_array_equal(codes, [[0, 0, 1], [0, 1, -1]])
    with pytest.raises(ValueError, match="non-empty"):
        mk.ternary_quantize(np.zeros(4))


def test_ternary_matvec_adds_and_subtracts():
    codes = np.array([[1, 0, -1], [-1, -1, 1]])
    x = np.array([3.0, 5.0, 7.0])
    np.testing.assert_allclose(mk.ternary_matvec(codes, 0.5, x), [0.5 * (3 - 7), 0.5 * (-3 - 5 + 7)])
    rng = np.random.default_rng(0)
    c = rng.integers(-1, 2, size=(16, 32))
    v = rng.normal(size=32)
    np.testing.assert_allclose(mk.ternary_matvec(c, 1.5, v), 1.5 * c @ v)
    with pytest.raises(ValueError, match="ternary"):
        mk.ternary_matvec(np.array([[2, 0]]), 1.0, np.ones(2))
    with pytest.raises(ValueError, match="x must be"):
        mk.ternary_matvec(codes, 1.0, np.ones(2))


def test_chapter_kv_cache_of_a_128k_llama_3_70b_sequence():
    per_token = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 KV heads, head_dim 128, bf16
    assert mk.kv_cache_bytes_per_token(mk.MODEL_FACTS["llama-3-70b"].config) == per_token
    assert per_token * 131072 == 40 * 2**30  # 40 GiB bf16, 20 GiB in FP8
    assert 256 * 1024 * per_token == 80 * 2**30  # the short-prompt service: 80 GiB


def test_chapter_vocabulary_and_router_shares():
    ends = 2 * 128256 * 4096  # Llama 3 8B embedding + untied lm_head
    assert ends == 1_050_673_152
    assert round(ends / mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"]), 2) == 0.13
    router = (61 - 3) * 256 * 7168  # DeepSeek-V3: 58 MoE layers, 256 experts, hidden 7168
    assert router == 106_430_464
    assert round(100 * router / 671e9, 2) == 0.02


def test_chapter_bitnet_bits_and_chain_survival():
    assert math.log2(3) == pytest.approx(1.585, abs=1e-3)
    assert round(16 / math.log2(3), 1) == 10.1
    assert round((1 - 1e-4) ** 10000, 2) == 0.37  # about 1/e
    assert round(1 / (1 - 1e-3) ** 10000, -3) == 22000.0
