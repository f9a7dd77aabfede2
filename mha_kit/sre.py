"""Site-reliability arithmetic for an LLM API: error-budget burn rates and a capacity forecast."""

import math


def burn_rate_threshold(budget_spent, alert_window_h, slo_window_h=720.0):
    """Burn rate at which a fraction of the error budget is spent within one alert window.

    A burn rate of 1 spends the whole budget in exactly the SLO window; a burn rate of ``b`` spends
    it in ``slo_window_h / b`` hours. Spending ``budget_spent`` of it within ``alert_window_h`` hours
    therefore takes ``b = budget_spent * slo_window_h / alert_window_h`` (Google SRE Workbook,
    ch. 5 "Alerting on SLOs": 2% in 1 h of a 30-day window is 14.4).

    Parameters
    ----------
    budget_spent : float
        Fraction of the window's error budget, in (0, 1].
    alert_window_h : float
        Length of the alert's look-back window, hours, > 0 and <= slo_window_h.
    slo_window_h : float
        Length of the SLO window, hours (720 = 30 days).

    Returns
    -------
    float
        The burn-rate threshold (bad-request rate over the budgeted rate 1 - SLO).
    """
    if not 0.0 < budget_spent <= 1.0:
        raise ValueError(f"budget_spent must be in (0, 1], got {budget_spent}")
    if not 0.0 < alert_window_h <= slo_window_h:
        raise ValueError(f"alert_window_h must be in (0, slo_window_h={slo_window_h}], got {alert_window_h}")
    return budget_spent * slo_window_h / alert_window_h


def forecast_replicas(peak_rate_now, growth, rate_per_replica, efficiency_gain=0.0, spare=1):
    """Replicas for next period's peak: forecast demand over planned per-replica capacity, plus spares.

    ``ceil(peak_rate_now * (1 + growth) / (rate_per_replica * (1 + efficiency_gain))) + spare``:
    demand grows by ``growth``; a planned software gain (a new engine release, FP8, speculation)
    raises what one replica serves at the same SLO by ``efficiency_gain``; ``spare`` replicas cover
    a failure or a drain (N + 1).

    Parameters
    ----------
    peak_rate_now : float
        Today's peak rate (requests/s, or tokens/s of one workload class), > 0.
    growth : float
        Forecast relative growth of the peak over the period, > -1.
    rate_per_replica : float
        Rate one replica sustains within the SLO, same unit, > 0.
    efficiency_gain : float
        Planned relative gain of per-replica capacity, >= 0.
    spare : int
        Extra replicas for failures and drains, >= 0.

    Returns
    -------
    int
        Replicas to have at the period's peak.
    """
    if peak_rate_now <= 0 or rate_per_replica <= 0:
        raise ValueError(f"rates must be > 0, got peak_rate_now={peak_rate_now}, rate_per_replica={rate_per_replica}")
    if growth <= -1:
        raise ValueError(f"growth must be > -1, got {growth}")
    if efficiency_gain < 0 or spare < 0:
        raise ValueError(f"efficiency_gain and spare must be >= 0, got {efficiency_gain}, {spare}")
    demand = peak_rate_now * (1.0 + growth)
    capacity = rate_per_replica * (1.0 + efficiency_gain)
    return math.ceil(demand / capacity - 1e-9) + int(spare)
