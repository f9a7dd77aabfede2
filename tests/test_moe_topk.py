"""mk.biased_topk picks its experts by k passes of argmin: the same choices, in the same order, as a stable sort."""
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
