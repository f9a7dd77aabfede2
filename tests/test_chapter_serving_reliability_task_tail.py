"""Claims of serving_reliability's section on an agent task's latency (calls in series), recomputed."""
import pytest

import mha_kit as mk


@pytest.mark.parametrize("calls, percent", [(20, 18), (30, 26)])
def test_calls_in_series_meet_a_p99_call(calls, percent):
    # 1 - 0.99^calls written as a product of `calls` factors
    all_fast = 1.0
    for _ in range(calls):
        all_fast *= 0.99
    assert round(100 * (1 - all_fast)) == percent
    assert round(100 * mk.any_call_slow(calls, 0.01)) == percent


def test_per_call_target_for_a_95_percent_task_over_20_calls():
    q = mk.per_call_quantile(20, 0.95)
    assert f"{100 * q:.2f}" == "99.74"
    product = 1.0
    for _ in range(20):
        product *= q
    assert abs(product - 0.95) < 1e-12


def test_per_call_deadlines_are_a_loose_budget_for_a_sum():
    # Independent sample: 20 lognormal calls, median 1 s, p99 3 s, built here from standard normals.
    from statistics import NormalDist

    import numpy as np

    sigma = np.log(3.0) / NormalDist().inv_cdf(0.99)
    calls = np.exp(sigma * np.random.default_rng(7).standard_normal((20_000, 20)))
    task_p95 = np.quantile(calls.sum(axis=1), 0.95)
    q = 0.95 ** (1 / 20)
    budget = 20 * np.exp(sigma * NormalDist().inv_cdf(q))  # 20 x the lognormal call's q-quantile
    assert abs(q - 0.99744) < 1e-5
    assert 26 <= task_p95 <= 28  # the chapter prints 27 s
    assert 74 <= budget <= 76  # the chapter prints 75 s
    assert 2.6 <= budget / task_p95 <= 3.0  # the chapter glues 2.8
    # 1% of calls ten times slower: the heavy events move the task's p95 far more than the light tail
    heavy = np.random.default_rng(8).random(calls.shape) < 0.01
    heavy_p95 = np.quantile(np.where(heavy, 10 * calls, calls).sum(axis=1), 0.95)
    assert 34 <= heavy_p95 <= 38  # the chapter prints 36 s
