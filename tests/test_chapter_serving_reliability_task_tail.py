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
