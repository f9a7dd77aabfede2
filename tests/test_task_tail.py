"""mha_kit.task_tail against Dean and Barroso's fan-out arithmetic and hand-worked values."""
import math

import numpy as np
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


def test_closed_ends_are_meaningful():
    assert mk.any_call_slow(5, 0) == 0.0  # calls never slow: no task meets one
    assert mk.any_call_slow(5, 1) == 1.0
    assert mk.per_call_quantile(5, 1) == 1.0  # a certain task needs certain calls


@pytest.mark.parametrize("bad", [-0.1, 1.2, True, "0.5", float("nan")])
def test_p_slow_must_be_a_probability(bad):
    with pytest.raises(ValueError, match=r"p_slow must be a probability in \[0, 1\]"):
        mk.any_call_slow(5, bad)


@pytest.mark.parametrize("bad", [0, -0.1, 1.2, True, "0.9", float("nan")])
def test_task_target_must_be_a_probability(bad):
    with pytest.raises(ValueError, match=r"task_target must be a probability in \(0, 1\]"):
        mk.per_call_quantile(5, bad)


def test_lognormal_calls_have_the_asked_median_and_p99():
    t = mk.lognormal_call_times(4, 1.0, 3.0, tasks=25_000, seed=0)
    assert t.shape == (25_000, 4)
    assert np.quantile(t, 0.5) == pytest.approx(1.0, rel=0.02)
    assert np.quantile(t, 0.99) == pytest.approx(3.0, rel=0.03)
    # the task is a sum: its mean is n times a lognormal's mean, median * exp(sigma^2 / 2)
    sigma = math.log(3.0) / 2.3263478740408408
    assert t.sum(axis=1).mean() == pytest.approx(4 * math.exp(sigma**2 / 2), rel=0.01)
    np.testing.assert_array_equal(t, mk.lognormal_call_times(4, 1.0, 3.0, tasks=25_000, seed=0))


def test_lognormal_call_times_errors():
    with pytest.raises(ValueError, match="call_p99 must exceed call_median"):
        mk.lognormal_call_times(3, 2.0, 2.0, tasks=10)
    with pytest.raises(ValueError, match="call_median must be a positive number"):
        mk.lognormal_call_times(3, 0.0, 2.0, tasks=10)
    with pytest.raises(ValueError, match="call_p99 must be a positive number"):
        mk.lognormal_call_times(3, 1.0, -2.0, tasks=10)
    with pytest.raises(ValueError, match="tasks"):
        mk.lognormal_call_times(3, 1.0, 2.0, tasks=0)
    with pytest.raises(ValueError, match="calls"):
        mk.lognormal_call_times(0, 1.0, 2.0, tasks=10)
