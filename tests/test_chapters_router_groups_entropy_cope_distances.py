"""Claims on the MoE router's expert groups, float32 exp overflow, a confident row at half temperature, semantic
entropy, CoPE's counts and trained distances, recomputed by hand (moe_serving, softmax_numerics, decoding_sampling,
position_encodings, long_context_structure)."""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_flat_top8_of_256_spans_about_5_3_of_8_groups():
    # moe_serving-router: a group of 32 experts is missed by all 8 uniform picks with C(224, 8) / C(256, 8)
    expected = 8 * (1 - math.comb(224, 8) / math.comb(256, 8))
    assert f"{expected:.1f}" == "5.3"


def test_float32_exp_overflows_below_the_chapter_logits():
    # softmax_numerics-streaming-entropy: logits near 95 are past log(float32 max) = 88.72
    assert 88.7 < math.log(float(np.finfo(np.float32).max)) < 88.8


def test_confident_row_at_half_temperature():
    # decoding_sampling-confident-error: squaring the probabilities is T = 0.5
    p = np.array([0.03, 0.92, 0.02, 0.02, 0.01])
    wrong = 1 - p[0] ** 2 / (p ** 2).sum()
    assert f"{wrong:.3f}" == "0.999"
    assert f"{1 - 0.35:.2f}" == "0.65"


def test_confabulating_samples_semantic_entropy():
    # 3 x 1912, 3 x 1915, 2 x 1908, 1 x 1921, 1 x 1930 out of 10
    h = -(2 * 0.3 * math.log(0.3) + 0.2 * math.log(0.2) + 2 * 0.1 * math.log(0.1))
    assert f"{h:.2f}" == "1.50"
    answers = ["1912", "1915", "1912", "1908", "1921", "1915", "1912", "1930", "1908", "1915"]
    assert mk.discrete_semantic_entropy(answers) == pytest.approx(h)


def test_cope_sentence_toy_counts_three_stops():
    # position_encodings-content-dependent: gates sigmoid(+8) on the 3 stops, sigmoid(-8) on 9 other tokens
    sig = 1 / (1 + math.exp(-8))
    assert f"{3 * sig + 9 * (1 - sig):.1f}" == "3.0"


def test_full_rows_train_distance_1536_at_0_29_of_distance_256():
    # long_context_structure-trained-distances: a full row of 2048 holds 2048 - r pairs at distance r
    assert f"{(2048 - 1536) / (2048 - 256):.2f}" == "0.29"
    c = mk.trained_distance_counts([2048] * 3, 2048)
    assert c[1536] / c[256] == pytest.approx(512 / 1792)
