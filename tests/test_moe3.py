"""mha_kit.moe additions: GPUs a token reaches, per-peer dispatch bytes, DeepSeek-V3's biased routing."""
import itertools
from math import comb

import numpy as np
import pytest

import mha_kit as mk


def test_ranks_reached_matches_enumeration_on_a_small_case():
    # 8 experts on 4 GPUs (2 each), top 2: enumerate all C(8, 2) = 28 choices
    reached = [len({e // 2 for e in pair}) for pair in itertools.combinations(range(8), 2)]
    assert mk.ep_ranks_reached(8, 2, 4) == pytest.approx(np.mean(reached))
    assert mk.ep_ranks_reached(8, 2, 4) == pytest.approx(4 * (1 - comb(6, 2) / comb(8, 2)))


def test_ranks_reached_limits():
    assert mk.ep_ranks_reached(256, 8, 1) == 1.0  # one GPU holds everything
    assert mk.ep_ranks_reached(256, 8, 256) == pytest.approx(8.0)  # one expert a GPU: k GPUs
    assert mk.ep_ranks_reached(256, 8, 32) < 8.0


def test_peer_bytes_per_expert_and_deduplicated():
    token = 7168 + 7168 // 128 * 4  # FP8 hidden plus one float32 scale per 128 channels
    assert token == 7392
    assert mk.ep_peer_bytes(128, 256, 8, 16, token, per_expert=True) == pytest.approx(128 * 8 / 16 * 7392)
    dedup = mk.ep_peer_bytes(128, 256, 8, 16, token)
    assert dedup == pytest.approx(128 * (1 - comb(240, 8) / comb(256, 8)) * 7392)
    assert dedup < mk.ep_peer_bytes(128, 256, 8, 16, token, per_expert=True)


def test_ep_errors():
    with pytest.raises(ValueError, match="divisible by ep"):
        mk.ep_ranks_reached(256, 8, 24)
    with pytest.raises(ValueError, match="token_bytes must be an integer"):
        mk.ep_peer_bytes(128, 256, 8, 16, 0)


def test_biased_topk_selects_with_bias_weights_without():
    scores = np.array([[0.9, 0.8, 0.1, 0.05]])
    choices, weights = mk.biased_topk(scores, np.array([0.0, -1.0, 0.0, 0.0]), 2)
    assert choices.dtype == np.intp
    assert choices.tolist() == [[0, 2]]  # expert 1 pushed out by its bias
    assert weights == pytest.approx(np.array([[0.9, 0.1]]))  # raw affinities, renormalised
    choices, _ = mk.biased_topk(scores, np.zeros(4), 2)
    assert choices.tolist() == [[0, 1]]


def test_bias_update_is_plus_minus_gamma():
    new = mk.bias_update(np.zeros(4), np.array([10, 2, 4, 4]), 0.001)  # mean 5
    assert new.tolist() == [-0.001, 0.001, 0.001, 0.001]


def test_routing_errors():
    with pytest.raises(ValueError, match="scores must be"):
        mk.biased_topk(np.ones((2, 4)), np.zeros(3), 2)
    with pytest.raises(ValueError, match="top_k"):
        mk.biased_topk(np.ones((2, 4)), np.zeros(4), 5)
    with pytest.raises(ValueError, match="gamma must be"):
        mk.bias_update(np.zeros(4), np.ones(4), 0)
    with pytest.raises(ValueError, match="same shape"):
        mk.bias_update(np.zeros(3), np.ones(4), 0.1)
