"""Mixtures of experts: expected experts touched, expert parameters, parameters a step reads.

Expected values are the formula written out (uniform routing: each of E experts is missed by one
token with probability 1 - k/E) and products of the published shapes (DeepSeek-V3 arXiv:2412.19437
sec. 4.2; Qwen/Qwen3-30B-A3B config.json), checked against the published active counts.
"""
import numpy as np
import pytest

import mha_kit as mk

V3 = mk.MODEL_FACTS["deepseek-v3"]
QWEN3 = mk.MODEL_FACTS["qwen3-30b-a3b"]


@pytest.mark.parametrize("n, expected", [
    (1, 8.0),  # one token: its own top-8
    (5, 256 * (1 - (248 / 256) ** 5)),  # a k = 4 verification step: about 37.6
    (32, 256 * (1 - (248 / 256) ** 32)),  # about 163
])
def test_experts_touched_deepseek_v3(n, expected):
    assert mk.experts_touched(n, 256, 8) == pytest.approx(expected, rel=1e-12)


def test_experts_touched_rounded_as_quoted():
    assert round(mk.experts_touched(5, 256, 8)) == 38 and int(mk.experts_touched(5, 256, 8)) == 37
    assert round(mk.experts_touched(32, 256, 8)) == 163


def test_experts_touched_tends_to_all_experts_and_grows_with_tokens():
    touched = [mk.experts_touched(n, 128, 8) for n in (1, 2, 4, 16, 64, 1024)]
    assert touched == sorted(touched) and touched[-1] == pytest.approx(128, abs=1e-9)


def test_experts_touched_top_k_equal_to_experts_is_all():
    assert mk.experts_touched(3, 8, 8) == 8.0


def test_experts_touched_rejects_bad_input():
    with pytest.raises(ValueError, match=r"top_k \(9\) must not exceed num_experts \(8\)"):
        mk.experts_touched(1, 8, 9)
    assert mk.experts_touched(0, 8, 2) == 0.0  # no token reaches no expert


def test_expert_params():
    assert mk.expert_params(V3) == 3 * 7168 * 2048
    assert mk.expert_params(QWEN3) == 3 * 2048 * 768
    assert mk.routed_expert_params(V3) == 58 * 256 * 3 * 7168 * 2048
    assert mk.routed_expert_params(QWEN3) == 48 * 128 * 3 * 2048 * 768


@pytest.mark.parametrize("facts, published", [(V3, 37e9), (QWEN3, 3.3e9), (mk.MODEL_FACTS["deepseek-v2"], 21e9)])
def test_one_token_reads_about_the_published_active_parameters(facts, published):
    # everything but the routed experts, plus top-k routed experts a layer: within 4 % of the published count,
    # which is rounded (DeepSeek-V2's 21B: ours is 21.6B with, 20.6B without its embedding and output head)
    assert mk.params_read_per_step(facts, 1) == pytest.approx(published, rel=0.04)


def test_a_batch_reads_more_experts():
    routed_one = 58 * 8 * 3 * 7168 * 2048
    routed_32 = 58 * 256 * (1 - (248 / 256) ** 32) * 3 * 7168 * 2048
    assert mk.params_read_per_step(V3, 32) - mk.params_read_per_step(V3, 1) == pytest.approx(routed_32 - routed_one)


def test_dense_model_reads_all_its_weights():
    assert mk.params_read_per_step(mk.MODEL_FACTS["llama-3-70b"], 64) == mk.model_params(mk.MODEL_FACTS["llama-3-70b"])


def test_expert_params_needs_a_moe_record():
    with pytest.raises(ValueError, match=r"llama-3-8b is not a mixture of experts"):
        mk.expert_params(mk.MODEL_FACTS["llama-3-8b"])
    with pytest.raises(ValueError, match=r"expected a ModelFacts record"):
        mk.expert_params(mk.PRESETS["deepseek-v3"])


def test_route_tokens_gives_distinct_experts_per_token():
    choices = mk.route_tokens(50, 16, 4, np.random.default_rng(0))
    assert choices.shape == (50, 4)
    assert all(len(set(row)) == 4 for row in choices.tolist()) and choices.min() >= 0 and choices.max() < 16


def test_uniform_routing_matches_the_formula_on_average():
    rng = np.random.default_rng(1)
    distinct = [len(np.unique(mk.route_tokens(5, 256, 8, rng))) for _ in range(2000)]
    assert np.mean(distinct) == pytest.approx(256 * (1 - (248 / 256) ** 5), abs=0.15)  # 37.6


def test_popularity_skews_the_loads():
    rng = np.random.default_rng(2)
    hot = np.ones(16)
    hot[:2] = 20.0  # two hot experts, both on GPU 0 of 4
    loads = mk.rank_loads(mk.route_tokens(400, 16, 2, rng, popularity=hot), 16, 4)
    assert loads.sum() == 400 * 2 and loads[0] == loads.max() and loads[0] > 2 * loads[1:].mean()


def test_rank_loads_by_hand():
    choices = [[0, 1], [1, 5], [6, 7]]  # experts 0..7 on 2 GPUs: 0-3 and 4-7
    assert mk.rank_loads(choices, 8, 2).tolist() == [3, 3]
    with pytest.raises(ValueError, match=r"num_experts \(8\) must be divisible by ep \(3\)"):
        mk.rank_loads(choices, 8, 3)


def test_route_tokens_rejects_bad_popularity():
    with pytest.raises(ValueError, match=r"popularity must be 8 positive weights, got shape \(3,\)"):
        mk.route_tokens(2, 8, 2, np.random.default_rng(0), popularity=[1, 2, 3])


def test_expert_all_to_all_bytes_by_hand():
    # 256 tokens over 8 GPUs: 32 each, 8 experts a token, 7/8 of them remote, d = 7168, bf16, both ways
    assert mk.expert_all_to_all_bytes(256, 7168, 8, 8) == 2 * 32 * 8 * 7 / 8 * 7168 * 2
    assert mk.expert_all_to_all_bytes(256, 7168, 8, 1) == 0  # one GPU holds every expert
    assert mk.expert_all_to_all_bytes(256, 7168, 8, 8, fmt="fp8") == 32 * 8 * 7 / 8 * 7168 * 2
    with pytest.raises(ValueError, match=r"num_tokens \(10\) must be divisible by ep \(4\)"):
        mk.expert_all_to_all_bytes(10, 7168, 8, 4)
