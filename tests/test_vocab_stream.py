"""mha_kit.vocab_stream: the online normaliser (arXiv:1805.02867 sec. 3) plus an entropy accumulator."""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_matches_a_direct_computation_at_any_chunking():
    rng = np.random.default_rng(2)
    x = rng.normal(0, 4, 5000)
    p = np.exp(x - x.max())
    p /= p.sum()
    h = -(p * np.log(p)).sum()
    lz = x.max() + math.log(np.exp(x - x.max()).sum())
    for pieces in (1, 3, 64):
        got_lz, got_h = mk.stream_logz_entropy(np.array_split(x, pieces))
        assert got_lz == pytest.approx(lz, rel=1e-12) and got_h == pytest.approx(h, rel=1e-9)


def test_hand_worked_and_no_overflow():
    # two equal logits of 1000: log Z = 1000 + log 2, H = log 2; a naive exp(1000) overflows
    lz, h = mk.stream_logz_entropy([np.array([1000.0]), np.array([1000.0])])
    assert lz == pytest.approx(1000 + math.log(2)) and h == pytest.approx(math.log(2))
    lz, h = mk.stream_logz_entropy([np.zeros(4)])
    assert h == pytest.approx(math.log(4))


def test_errors():
    with pytest.raises(ValueError, match="at least one logit"):
        mk.stream_logz_entropy([])
    with pytest.raises(ValueError, match="chunk 1 must be"):
        mk.stream_logz_entropy([np.zeros(2), np.array([np.inf])])
