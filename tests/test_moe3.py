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


# --- claims of book/moe_serving.ipynb's new sections, recomputed independently ---

def test_dispatch_floor_at_ep32_is_near_deepeps_measurement():
    # 128 tokens a GPU, top 8 of 256, FP8 copy of 7168 + 56 * 4 bytes; copies to the 31 other GPUs
    out = 128 * 8 * 31 / 32 * (7168 + 56 * 4)
    assert round(out / 50e9 * 1e6) == 147  # microseconds at 50 GB/s; DeepEP measured 155 us
    assert mk.ep_peer_bytes(128, 256, 8, 32, 7392, per_expert=True) * 31 == pytest.approx(out)


def test_combine_copy_is_about_twice_a_dispatch_copy():
    assert round(2 * 7168 / (7168 + 7168 // 128 * 4), 2) == 1.94
    measured = {8: (77, 114), 128: (192, 369)}  # DeepEP docs/legacy.md, low-latency table
    assert round(min(c / d for d, c in measured.values()), 1) == 1.5
    assert round(max(c / d for d, c in measured.values()), 1) == 1.9


def test_prefill_node_dedup_saves_about_half_the_network_bytes():
    nodes = 4 * (1 - comb(192, 8) / comb(256, 8))  # nodes of 64 experts a token reaches
    assert round(nodes, 1) == 3.6
    normal = 4096 * nodes * 3 / 4 * 7392  # one copy per other node reached
    per_expert = 4096 * 8 * 24 / 32 * 7392  # one copy per expert on another node
    assert 0.4 < normal / per_expert < 0.5
    assert round(1e3 * normal / 50e9, 1) == 1.6  # ms a layer at 50 GB/s


def test_fixed_batch_peer_message_shrinks_as_ep_squared():
    small, large = (mk.ep_peer_bytes(4096 // ep, 256, 8, ep, 7392, per_expert=True) for ep in (16, 128))
    assert small == 256 * 8 / 16 * 7392 and large == 32 * 8 / 128 * 7392
    assert small / large == 64  # (128 / 16) ** 2
