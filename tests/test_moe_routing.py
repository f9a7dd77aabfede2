"""mha_kit.moe.experts_touched against every routing enumerated, a Monte Carlo run, and its error paths."""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import mha_kit as mk


def exact_expected(num_tokens, num_experts, top_k):
    """Average distinct experts over every way the tokens can pick their top-k sets (uniform routing)."""
    sets = list(itertools.combinations(range(num_experts), top_k))
    total = sum(len(set().union(*choice)) for choice in itertools.product(sets, repeat=num_tokens))
    return Fraction(total, len(sets) ** num_tokens)


@pytest.mark.parametrize("num_tokens, num_experts, top_k", [
    (1, 4, 2),  # one token: exactly its top-k
    (2, 4, 2),  # two tokens, half the experts each
    (3, 5, 2),  # three tokens
    (2, 6, 1),  # top-1 routing
    (0, 4, 2),  # no token reaches no expert
])
def test_matches_enumeration_of_every_routing(num_tokens, num_experts, top_k):
    assert mk.experts_touched(num_tokens, num_experts, top_k) == pytest.approx(
        float(exact_expected(num_tokens, num_experts, top_k)), rel=1e-12)


def test_one_token_reads_top_k_and_many_reach_all():
    assert mk.experts_touched(1, 256, 8) == pytest.approx(8)  # DeepSeek-V3: 8 of 256 routed experts
    assert mk.experts_touched(10_000, 256, 8) == pytest.approx(256)


def test_deepseek_v3_verification_of_four_drafts():
    """k = 4 drafts: 5 tokens; 256 * (1 - (31/32)^5), worked by hand."""
    by_hand = 256 * (1 - (31 / 32) ** 5)
    assert mk.experts_touched(5, 256, 8) == pytest.approx(by_hand, rel=1e-12)
    assert round(by_hand, 1) == 37.6


def test_monte_carlo_agrees():
    rng = np.random.default_rng(0)
    trials = [len(set(np.concatenate([rng.choice(64, 6, replace=False) for _ in range(4)]))) for _ in range(20_000)]
    assert np.mean(trials) == pytest.approx(mk.experts_touched(4, 64, 6), rel=0.01)


def test_grows_with_tokens_and_never_exceeds_the_experts():
    values = [mk.experts_touched(n, 256, 8) for n in range(1, 40)]
    assert all(a < b for a, b in zip(values, values[1:])) and max(values) <= 256
    assert math.isclose(mk.experts_touched(3, 8, 8), 8)  # every token reads every expert


@pytest.mark.parametrize("args, message", [
    ((-1, 8, 2), r"num_tokens must be an integer >= 0, got -1"),
    ((2, 0, 1), r"num_experts must be an integer >= 1, got 0"),
    ((2, 8, 0), r"top_k must be an integer >= 1, got 0"),
    ((2, 8, 9), r"top_k \(9\) must not exceed num_experts \(8\)"),
    ((2.0, 8, 2), r"num_tokens must be an integer"),
    ((True, 8, 2), r"num_tokens must be an integer"),
])
def test_errors_name_the_rule_and_the_value(args, message):
    with pytest.raises(ValueError, match=message):
        mk.experts_touched(*args)
