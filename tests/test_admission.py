"""mha_kit.admission: the queue depth a TTFT target allows, against hand-worked budgets."""
import pytest

import mha_kit as mk


def test_course_budget_worked_by_hand():
    # 800 ms target, 220 ms retrieval + 60 ms overhead outside the queue, 160 ms prefill:
    # 800 - 220 - 60 - 160 = 360 ms of waiting, two whole prefills of 160 ms.
    assert mk.admission_queue_depth(0.800, 0.220 + 0.060, 0.160) == 2


def test_replicas_share_one_queue():
    # Four replicas clear four prefills per 160 ms: 4 * 360 / 160 = 9 (floor of 9.0).
    assert mk.admission_queue_depth(0.800, 0.280, 0.160, replicas=4) == 9


def test_exact_multiple_is_not_lost_to_rounding():
    # slack 0.3 s, prefill 0.1 s: exactly three prefills fit (0.3 / 0.1 is 2.9999999999999996 in floats).
    assert mk.admission_queue_depth(0.5, 0.1, 0.1) == 3


def test_slack_shorter_than_one_prefill_gives_zero():
    assert mk.admission_queue_depth(0.25, 0.05, 0.15) == 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(ttft_slo=0.2, fixed=0.15, prefill=0.1), "fixed stages plus one prefill"),
    (dict(ttft_slo=0.0, fixed=0.0, prefill=0.1), "ttft_slo must be a positive number"),
    (dict(ttft_slo=0.8, fixed=-0.1, prefill=0.1), "fixed .* must be a finite number >= 0"),
    (dict(ttft_slo=0.8, fixed=0.1, prefill=0.0), "prefill must be a positive number"),
    (dict(ttft_slo=0.8, fixed=0.1, prefill=0.1, replicas=0), "replicas"),
])
def test_errors_name_the_rule(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mk.admission_queue_depth(**kwargs)
