"""mk.biased_topk picks its experts by k passes of argmin (the same choices, in the same order, as a stable sort);
mk.route_tokens draws all tokens at once (the distribution of rng.choice without replacement)."""
from collections import Counter

import numpy as np

import mha_kit as mk


def test_biased_topk_matches_a_stable_sort_with_ties():
    rng = np.random.default_rng(0)
    scores = rng.integers(1, 4, (64, 12)) / 2.0  # (64, 12): many ties, broken by the lower index
    bias = rng.integers(-1, 2, 12) / 2.0  # (12,)
    for k in (1, 3, 12):
        expected = np.argsort(-(scores + bias), axis=1, kind="stable")[:, :k]
        choices, weights = mk.biased_topk(scores, bias, k)
        assert np.array_equal(choices, expected)
        assert np.allclose(weights.sum(axis=1), 1.0)


def test_biased_topk_with_an_infinite_bias_falls_back_to_the_sort():
    choices, _ = mk.biased_topk(np.array([[0.5, 0.4, 0.3]]), np.array([0.0, -np.inf, 0.0]), 3)
    assert choices.tolist() == [[0, 2, 1]]  # the expert with -inf bias last, as argsort puts it


def test_route_tokens_matches_rng_choice_in_distribution():
    p = np.array([50.0, 1.0, 2.0, 3.0, 0.5])  # one expert with 88% of the weight: repeats are redrawn often
    ours = Counter(map(tuple, mk.route_tokens(6000, 5, 3, np.random.default_rng(0), popularity=p).tolist()))
    rng = np.random.default_rng(1)
    numpy_s = Counter(tuple(rng.choice(5, 3, replace=False, p=p / p.sum()).tolist()) for _ in range(6000))
    for order in ((0, 3, 2), (0, 2, 3), (3, 0, 2), (1, 0, 4)):  # ordered draws, common and rare
        assert abs(ours[order] - numpy_s[order]) < 5 * np.sqrt(numpy_s[order] + 1)
    assert sum(ours.values()) == 6000 and all(len(set(row)) == 3 for row in ours)


def test_route_tokens_with_a_dominant_expert_still_finishes():
    choices = mk.route_tokens(500, 8, 4, np.random.default_rng(0), popularity=[1e12, 1, 1, 1, 1, 1, 1, 2])
    assert (choices[:, 0] == 0).all() and all(len(set(row)) == 4 for row in choices.tolist())
