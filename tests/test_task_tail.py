"""mha_kit.task_tail against Dean and Barroso's fan-out arithmetic and hand-worked values."""
import math

import pytest

import mha_kit as mk


def test_any_call_slow_matches_dean_barroso_example():
    # "The Tail at Scale": 1% slow on each of 100 servers makes 63% of requests slow.
    assert mk.any_call_slow(100, 0.01) == pytest.approx(0.634, abs=1e-3)


def test_any_call_slow_hand_values():
    assert mk.any_call_slow(1, 0.01) == pytest.approx(0.01)
    assert mk.any_call_slow(2, 0.5) == pytest.approx(0.75)  # 1 - 0.5 * 0.5
    assert mk.any_call_slow(20, 0.01) == pytest.approx(1 - 0.99**20)


def test_per_call_quantile_inverts_the_product():
    q = mk.per_call_quantile(20, 0.95)
    assert q**20 == pytest.approx(0.95)
    assert q == pytest.approx(math.exp(math.log(0.95) / 20))
    assert mk.per_call_quantile(1, 0.95) == pytest.approx(0.95)
    # more calls demand a higher per-call quantile
    assert mk.per_call_quantile(30, 0.95) > mk.per_call_quantile(10, 0.95)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_calls_must_be_positive_int(bad):
    with pytest.raises(ValueError, match="calls"):
        mk.any_call_slow(bad, 0.01)
    with pytest.raises(ValueError, match="calls"):
        mk.per_call_quantile(bad, 0.95)


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.2, True])
def test_probabilities_strictly_inside(bad):
    with pytest.raises(ValueError, match="p_slow must be a probability"):
        mk.any_call_slow(5, bad)
    with pytest.raises(ValueError, match="task_target must be a probability"):
        mk.per_call_quantile(5, bad)
