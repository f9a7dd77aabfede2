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
