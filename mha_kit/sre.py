"""Site-reliability arithmetic for an LLM API: error-budget burn rates, a capacity forecast, an autoscaler replay."""

import math

import numpy as np


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


def replay_autoscaler(demand, per_replica, start_delay, target_util=0.7, initial=1):
    """Replay a demand trace through a target-utilisation autoscaler whose new replicas start late.

    At each step the policy wants ``ceil(demand / (per_replica * target_util))`` replicas (at least
    one). If that is more than it has (ready plus starting) it orders the difference, ready
    ``start_delay`` steps later; if fewer and none is starting, it removes the excess at once. A step
    meets the SLO when its demand is within the ready replicas' capacity. Replicas are paid for from
    the step they are ordered.

    Parameters
    ----------
    demand : array_like of float, shape (T,)
        Requests per second at each step, >= 0.
    per_replica : float
        Requests per second one replica serves within the SLO, > 0.
    start_delay : int
        Steps from ordering a replica to its serving traffic, >= 1.
    target_util : float
        Utilisation the policy aims at, in (0, 1].
    initial : int
        Ready replicas at the start, >= 1.

    Returns
    -------
    tuple of (float, int, int)
        Share of steps within capacity, replica-steps paid, scaling actions taken.
    """
    demand = np.asarray(demand, dtype=np.float64)  # (T,)
    if demand.ndim != 1 or demand.size == 0 or (demand < 0).any():
        raise ValueError(f"demand must be a non-empty 1-D trace of rates >= 0, got shape {demand.shape}")
    if per_replica <= 0 or not 0 < target_util <= 1 or start_delay < 1 or initial < 1:
        raise ValueError(f"need per_replica > 0, 0 < target_util <= 1, start_delay >= 1, initial >= 1; got "
                         f"{per_replica}, {target_util}, {start_delay}, {initial}")
    ready, pending, within, paid, actions = int(initial), [], 0, 0, 0
    for t, rate in enumerate(demand):
        ready += sum(1 for due in pending if due <= t)
        pending = [due for due in pending if due > t]
        within += rate <= ready * per_replica
        want = max(1, math.ceil(rate / (per_replica * target_util)))
        if want > ready + len(pending):
            pending += [t + start_delay] * (want - ready - len(pending))
            actions += 1
        elif want < ready and not pending:
            ready, actions = want, actions + 1
        paid += ready + len(pending)
    return within / demand.size, paid, actions
