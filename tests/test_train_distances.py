"""mha_kit.train_distances: pairs per distance, hand-counted (causal: L - r pairs in a run of L)."""
import numpy as np
import pytest

import mha_kit as mk


def test_hand_counted():
    # docs of 3 and 5 tokens in rows of 4: runs 3 | 1 | 4 with the mask, 4 | 4 without
    assert mk.trained_distance_counts([3, 5], 4).tolist() == [8, 5, 3, 1]
    assert mk.trained_distance_counts([3, 5], 4, document_mask=False).tolist() == [8, 6, 4, 2]


def test_one_full_document_gives_the_triangle():
    counts = mk.trained_distance_counts([2048], 2048)
    assert counts[0] == 2048 and counts[2047] == 1 and counts.sum() == 2048 * 2049 // 2
    assert counts.dtype == np.int64


def test_errors():
    with pytest.raises(ValueError, match="at least one document"):
        mk.trained_distance_counts([], 8)
    with pytest.raises(ValueError, match="doc_lengths"):
        mk.trained_distance_counts([3, 0], 8)
