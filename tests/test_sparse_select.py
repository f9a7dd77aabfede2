"""mha_kit.sparse_select against brute force: the causal top-c mask and the balanced stage split."""
import itertools

import numpy as np
import pytest

import mha_kit as mk


def test_topk_mask_matches_a_hand_worked_case():
    s = np.array([[5.0, 9.0, 9.0], [1.0, 3.0, 9.0], [2.0, 7.0, 2.0]])
    keep = mk.indegree_topk_mask(s, [2, 1, 2])
    # row 0: one candidate; row 1: key 1 (3 > 1); row 2: keys 1 (7) and 0 (2, earlier than key 2's tie)
    assert keep.astype(int).tolist() == [[1, 0, 0], [0, 1, 0], [1, 1, 0]]


def test_topk_mask_keeps_the_largest_causal_scores():
    rng = np.random.default_rng(0)
    n = 7
    s = rng.standard_normal((n, n))
    c = rng.integers(1, 5, size=n)
    keep = mk.indegree_topk_mask(s, c)
    assert not np.any(np.triu(keep, 1))
    for j in range(n):
        kept = s[j, : j + 1][keep[j, : j + 1]]
        dropped = s[j, : j + 1][~keep[j, : j + 1]]
        assert kept.size == min(c[j], j + 1)
        assert dropped.size == 0 or kept.min() >= dropped.max()


def test_topk_mask_errors():
    with pytest.raises(ValueError, match="square"):
        mk.indegree_topk_mask(np.zeros((2, 3)), [1, 1])
    with pytest.raises(ValueError, match="budget"):
        mk.indegree_topk_mask(np.zeros((2, 2)), [1, 0])


def _brute(w, p):
    best = None
    for cuts in itertools.combinations(range(1, len(w)), p - 1):
        edges = (0, *cuts, len(w))
        worst = max(sum(w[a:b]) for a, b in zip(edges, edges[1:]))
        if best is None or worst < best:
            best = worst
    return best


def test_balanced_stages_matches_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(5):
        w = list(rng.integers(1, 9, size=7).astype(float))
        for p in (1, 2, 3):
            counts = mk.balanced_stages(w, p)
            assert sum(counts) == 7 and len(counts) == p and min(counts) >= 1
            edges = np.concatenate([[0], np.cumsum(counts)])
            worst = max(sum(w[a:b]) for a, b in zip(edges, edges[1:]))
            assert worst == _brute(w, p)


def test_balanced_stages_gives_a_heavy_last_layer_its_own_room():
    assert mk.balanced_stages([1, 1, 1, 1, 1, 1, 1, 1, 4], 2) == (6, 3)  # 6 and 2 + 4: an even 5|4 split gives 7


def test_balanced_stages_errors():
    with pytest.raises(ValueError, match="positive"):
        mk.balanced_stages([1.0, 0.0], 1)
    with pytest.raises(ValueError, match="1 <= p <= L"):
        mk.balanced_stages([1.0, 2.0], 3)
