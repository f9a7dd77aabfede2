"""mha_kit.sre against the Google SRE Workbook, ch. 5 "Alerting on SLOs" (recommended parameters)."""

import pytest

import mha_kit as mk


def test_burn_rates_of_the_workbook_table():
    # 2% of a 30-day budget in 1 h, 5% in 6 h, 10% in 3 days: burn rates 14.4, 6 and 1
    assert mk.burn_rate_threshold(0.02, 1) == pytest.approx(14.4)
    assert mk.burn_rate_threshold(0.05, 6) == pytest.approx(6.0)
    assert mk.burn_rate_threshold(0.10, 72) == pytest.approx(1.0)
    # the whole budget over the whole window is burn rate 1 by definition
    assert mk.burn_rate_threshold(1.0, 720) == 1.0


def test_burn_rate_errors():
    with pytest.raises(ValueError, match="budget_spent"):
        mk.burn_rate_threshold(0.0, 1)
    with pytest.raises(ValueError, match="alert_window_h"):
        mk.burn_rate_threshold(0.02, 1000)


def test_forecast_replicas():
    # 40/s today, +50%, 10/s per replica: 6 for demand, +1 spare
    assert mk.forecast_replicas(40, 0.5, 10) == 7
    # a planned 20% gain: 60 / 12 = 5, +1
    assert mk.forecast_replicas(40, 0.5, 10, efficiency_gain=0.2) == 6
    # exact fit does not round up; any excess does
    assert mk.forecast_replicas(30, 0.0, 10, spare=0) == 3
    assert mk.forecast_replicas(30.5, 0.0, 10, spare=0) == 4


def test_forecast_errors():
    with pytest.raises(ValueError, match="rates must be > 0"):
        mk.forecast_replicas(0, 0.5, 10)
    with pytest.raises(ValueError, match="growth"):
        mk.forecast_replicas(40, -1, 10)
    with pytest.raises(ValueError, match="efficiency_gain and spare"):
        mk.forecast_replicas(40, 0.5, 10, spare=-1)


def test_replay_autoscaler_by_hand():
    # worked by hand: a jump from 1 to 3 at t=2 is served from t=4 (start_delay 2); scale-in at t=5
    share, paid, actions = mk.replay_autoscaler([1, 1, 3, 3, 3, 1], per_replica=1, start_delay=2,
                                                target_util=1.0, initial=1)
    assert (share, paid, actions) == (4 / 6, 12, 2)
    # a constant load within one replica needs no action
    assert mk.replay_autoscaler([0.5] * 5, 1, 3) == (1.0, 5, 0)


def test_replay_autoscaler_headroom_helps():
    step = [10.0] * 10 + [18.0] * 10
    tight = mk.replay_autoscaler(step, 10, 3, target_util=1.0, initial=1)
    roomy = mk.replay_autoscaler(step, 10, 3, target_util=0.5, initial=1)
    assert roomy[0] > tight[0] and roomy[1] > tight[1]


def test_replay_autoscaler_errors():
    with pytest.raises(ValueError, match="non-empty 1-D trace"):
        mk.replay_autoscaler([], 1, 1)
    with pytest.raises(ValueError, match="start_delay >= 1"):
        mk.replay_autoscaler([1.0], 1, 0)
