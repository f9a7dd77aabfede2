"""mha_kit.confidence: discrete semantic entropy (Farquhar et al. 2024, Methods) and token entropy."""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_semantic_entropy_hand_worked():
    assert mk.discrete_semantic_entropy(["paris"] * 5) == 0.0
    assert str(mk.discrete_semantic_entropy(["paris"] * 5)) == "0.0"  # not -0.0
    assert mk.discrete_semantic_entropy(list("abcde")) == pytest.approx(math.log(5))
    assert mk.discrete_semantic_entropy(list("aaab")) == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))


def test_token_entropy_and_temperature():
    assert mk.token_entropy(np.zeros(8)) == pytest.approx(math.log(8))
    peaked = np.array([10.0, 0.0, 0.0])
    assert mk.token_entropy(peaked, 0.5) < mk.token_entropy(peaked) < mk.token_entropy(peaked, 2.0)


def test_errors():
    with pytest.raises(ValueError, match="at least one"):
        mk.discrete_semantic_entropy([])
    with pytest.raises(ValueError, match="temperature"):
        mk.token_entropy(np.zeros(3), 0)
    with pytest.raises(ValueError, match="finite"):
        mk.token_entropy(np.array([np.nan]))
