"""mha_kit.first_divergence: the first step where a cached decode departs from the full pass."""
import numpy as np
import pytest

import mha_kit as mk


def test_identical_outputs_never_diverge():
    a = np.arange(12.0).reshape(4, 3)
    assert mk.first_divergence(a, a.copy()) is None


def test_the_first_differing_row_is_returned_not_a_later_one():
    a = np.zeros((6, 2, 3))
    b = a.copy()
    b[4, 1, 2] = 1.0
    b[2, 0, 0] = 1e-3  # an earlier, smaller difference, still beyond the tolerance
    assert mk.first_divergence(a, b) == 2


def test_differences_within_the_tolerance_are_ignored():
    a = np.ones((3, 4))
    assert mk.first_divergence(a, a + 1e-12) is None
    assert mk.first_divergence(a, a + 1e-3, rtol=1e-2) is None
    assert mk.first_divergence(a, a + 1e-3) == 0


def test_one_dimensional_rows_and_empty_input():
    assert mk.first_divergence([1.0, 2.0, 3.0], [1.0, 2.0, 3.5]) == 2
    assert mk.first_divergence(np.zeros((0, 4)), np.zeros((0, 4))) is None


def test_a_nan_counts_as_a_divergence():
    assert mk.first_divergence([1.0, 2.0], [1.0, np.nan]) == 1


@pytest.mark.parametrize("a, b", [(np.zeros((3, 2)), np.zeros((3, 3))), (np.float64(1.0), np.float64(1.0))])
def test_shapes_must_match_and_have_rows(a, b):
    with pytest.raises(ValueError, match="same shape"):
        mk.first_divergence(a, b)
