"""mha_kit.slo: Poisson workloads, percentiles, SLO attainment and DistServe's goodput, checked by hand."""
import math

import numpy as np
import pytest

import mha_kit as mk


def _lat(ttft, tpot):
    return mk.RequestLatency(ttft=ttft, tpot=tpot, max_itl=tpot, finish=1.0)


def test_poisson_requests_mean_gap_and_lengths():
    reqs = mk.poisson_requests(10.0, 2000, [100, 100, 3000], 50, seed=1)
    gaps = np.diff([0.0] + [a for a, _, _ in reqs])
    assert gaps.mean() == pytest.approx(0.1, rel=0.05)  # exponential gaps of mean 1 / rate
    prompts = [p for _, p, _ in reqs]
    assert set(prompts) == {100, 3000} and prompts.count(3000) / len(prompts) == pytest.approx(1 / 3, abs=0.04)
    assert all(o == 50 for _, _, o in reqs)
    assert reqs == mk.poisson_requests(10.0, 2000, [100, 100, 3000], 50, seed=1)  # seeded


@pytest.mark.parametrize("rate, n, match", [(0, 5, "rate must be a positive number"), (1.0, 0, "n must be a positive")])
def test_poisson_requests_errors(rate, n, match):
    with pytest.raises(ValueError, match=match):
        mk.poisson_requests(rate, n, 10, 10)


def test_latency_percentiles_linear_interpolation():
    lats = [_lat(t, 0.01 * t) for t in (1.0, 2.0, 3.0, 4.0, 5.0)] + [_lat(6.0, math.nan)]
    p = mk.latency_percentiles(lats, (50, 100))
    assert p["ttft"] == (3.5, 6.0)  # median of 1..6
    assert p["tpot"] == pytest.approx((0.03, 0.05))  # the single-token request is left out
    with pytest.raises(ValueError, match="RequestLatency"):
        mk.latency_percentiles([])


def test_slo_attainment_needs_both_targets():
    lats = [_lat(0.1, 0.02), _lat(0.1, 0.2), _lat(2.0, 0.02), _lat(0.1, math.nan)]
    assert mk.slo_attainment(lats, ttft_slo=0.5, tpot_slo=0.05) == 0.5  # the first and the one-token request
    with pytest.raises(ValueError, match="must be positive seconds"):
        mk.slo_attainment(lats, 0, 1)


def test_goodput_rate_is_the_largest_rate_meeting_the_target():
    assert mk.goodput_rate([1, 2, 3, 4], [1.0, 0.95, 0.91, 0.5]) == 3
    assert mk.goodput_rate([1, 2], [0.5, 0.4]) is None
    with pytest.raises(ValueError, match="one length"):
        mk.goodput_rate([1, 2], [1.0])
    with pytest.raises(ValueError, match="target must lie"):
        mk.goodput_rate([1], [1.0], target=0)


def test_simulated_goodput_falls_when_load_exceeds_capacity():
    step = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])
    att = []
    for rate in (5, 400):
        lats = mk.simulate_batching(mk.poisson_requests(rate, 200, 1000, 100, seed=0), step, 8192, max_seqs=256)
        att.append(mk.slo_attainment(lats, 1.0, 0.05))
    assert att[0] == 1.0 and att[1] < 0.5
