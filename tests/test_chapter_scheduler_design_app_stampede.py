"""Chapter "Scheduling and cache policy", section scheduler_design-app-stampede: the duplicate count and
XFetch's early-recompute probability, recomputed independently (a Monte Carlo of the rule)."""
import math

import numpy as np


def test_duplicates_in_the_recompute_window():
    assert int(50 * 3.0) == 150


def test_xfetch_probability_matches_the_rule():
    # The rule: recompute when -beta * delta * ln(U) >= T, U uniform on (0, 1]. Its probability is exp(-T / (beta delta)).
    rng = np.random.default_rng(0)
    u = 1.0 - rng.random(200_000)  # uniform on (0, 1]
    delta, beta = 3.0, 1.0
    for to_expiry in (30.0, 10.0, 3.0, 1.0):
        simulated = np.mean(-beta * delta * np.log(u) >= to_expiry)
        assert abs(simulated - math.exp(-to_expiry / (beta * delta))) < 0.005
