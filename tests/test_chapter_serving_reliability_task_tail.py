"""Claims of serving_reliability's section on an agent task's latency (calls in series), recomputed."""
import mha_kit as mk


def test_twenty_calls_meet_a_p99_call_about_18_percent():
    # 1 - 0.99^20 written as a product of 20 factors
    all_fast = 1.0
    for _ in range(20):
        all_fast *= 0.99
    assert round(100 * (1 - all_fast)) == 18
    assert round(100 * mk.any_call_slow(20, 0.01)) == 18


def test_thirty_calls_meet_a_p99_call_about_26_percent():
    all_fast = 1.0
    for _ in range(30):
        all_fast *= 0.99
    assert round(100 * (1 - all_fast)) == 26
    assert round(100 * mk.any_call_slow(30, 0.01)) == 26


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
