"""mha_kit.routing against its sources: Mixtral sec. 2.1, Switch sec. 2.2, ST-MoE sec. 3.1, DeepSeek-V3's Gate."""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_mixtral_softmax_of_topk_equals_renormalised_softmax():
    # Mixtral eq.: G(x) = Softmax(TopK(x W_g)); transformers computes softmax, top-k, renormalise
    logits = np.array([[2.0, -1.0, 0.5, 3.0], [0.0, 0.0, 1.0, -2.0]])
    choices, weights = mk.topk_gates(logits, 2)
    assert choices.tolist() == [[3, 0], [2, 0]]  # ties to the lower index
    top = np.take_along_axis(logits, choices, axis=1)
    direct = np.exp(top) / np.exp(top).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(weights, direct, rtol=1e-12)
    # hand-worked: e^3 / (e^3 + e^2)
    assert weights[0, 0] == pytest.approx(math.exp(3) / (math.exp(3) + math.exp(2)))


def test_switch_weights_are_not_renormalised():
    logits = np.log(np.array([[0.5, 0.3, 0.2]]))
    _, weights = mk.topk_gates(logits, 2, renormalize=False)
    np.testing.assert_allclose(weights, [[0.5, 0.3]])


def _deepseek_gate(logits, bias, k, groups, topk_groups, scale):
    # a second, loop-based reading of Gate.forward (deepseek-ai/DeepSeek-V3 inference/model.py)
    s = 1 / (1 + np.exp(-logits))
    out_c, out_w = [], []
    for row in range(s.shape[0]):
        biased = s[row] + bias
        per = biased.reshape(groups, -1)
        gscore = [sorted(g)[-1] + sorted(g)[-2] for g in per]
        allowed = set(sorted(range(groups), key=lambda i: -gscore[i])[:topk_groups])
        cand = [e for e in range(len(biased)) if e // per.shape[1] in allowed]
        chosen = sorted(cand, key=lambda e: -biased[e])[:k]
        w = s[row, chosen]
        out_c.append(chosen)
        out_w.append(scale * w / w.sum())
    return np.array(out_c), np.array(out_w)


def test_grouped_topk_matches_a_loop_reading_of_deepseek_gate():
    rng = np.random.default_rng(0)
    logits, bias = rng.normal(size=(6, 32)), rng.normal(0, 0.1, 32)
    choices, weights = mk.grouped_topk_gates(logits, bias, 4, 8, 2, 2.5)
    ref_c, ref_w = _deepseek_gate(logits, bias, 4, 8, 2, 2.5)
    assert choices.tolist() == ref_c.tolist()
    np.testing.assert_allclose(weights, ref_w, rtol=1e-12)
    np.testing.assert_allclose(weights.sum(axis=1), 2.5)
    assert max(len(set(row)) for row in (choices // 4).tolist()) <= 2  # at most topk_groups groups (nodes)


def test_bias_chooses_but_never_weighs():
    logits = np.zeros((1, 4))
    choices, weights = mk.grouped_topk_gates(logits, np.array([0.0, 0.0, 0.0, 1.0]), 1, 1, 1, 1.0)
    assert choices.tolist() == [[3]] and weights.tolist() == [[1.0]]


def test_load_balance_loss_is_one_when_uniform_and_e_when_collapsed():
    e, n = 8, 64
    probs = np.full((n, e), 1 / e)
    uniform = np.arange(n).reshape(n, 1) % e
    assert mk.load_balance_loss(probs, uniform) == pytest.approx(1.0)
    collapsed = np.zeros((n, e))
    collapsed[:, 0] = 1.0
    assert mk.load_balance_loss(collapsed, np.zeros((n, 1), dtype=int)) == pytest.approx(e)


def test_router_z_loss_hand_worked():
    # logsumexp of E equal logits 0 is log E
    assert mk.router_z_loss(np.zeros((3, 8))) == pytest.approx(math.log(8) ** 2)
    assert mk.router_z_loss(np.array([[1000.0, 1000.0]])) == pytest.approx((1000 + math.log(2)) ** 2)


def test_errors():
    with pytest.raises(ValueError, match="must not exceed the number of experts"):
        mk.topk_gates(np.zeros((1, 4)), 5)
    with pytest.raises(ValueError, match="finite"):
        mk.topk_gates(np.array([[np.nan, 0.0]]), 1)
    with pytest.raises(ValueError, match="divisible by num_groups"):
        mk.grouped_topk_gates(np.zeros((1, 10)), np.zeros(10), 2, 4, 2, 1.0)
    with pytest.raises(ValueError, match="indices below E"):
        mk.load_balance_loss(np.full((2, 2), 0.5), np.array([[2], [0]]))
    with pytest.raises(ValueError, match="sum to 1"):
        mk.load_balance_loss(np.ones((2, 2)), np.array([[1], [0]]))
