"""mha_kit.reliability against the queueing formulas and a simulated queue."""
import math

import numpy as np
import pytest

import mha_kit as mk


@pytest.mark.parametrize("rho", [0.5, 0.8, 0.95])
def test_mm1_wait_is_rho_over_one_minus_rho(rho):
    assert mk.mm1_wait(rho) == pytest.approx(rho / (1 - rho))


def test_mm1_wait_matches_a_simulated_queue():
    # Lindley's recursion W_{n+1} = max(0, W_n + S_n - A_{n+1}) with exponential gaps and services.
    rng = np.random.default_rng(0)
    rho, n = 0.8, 400_000
    gaps, services = rng.exponential(1 / rho, n), rng.exponential(1.0, n)
    w, total = 0.0, 0.0
    for s, a in zip(services[:-1], gaps[1:]):
        w = max(0.0, w + s - a)
        total += w
    assert total / (n - 1) == pytest.approx(mk.mm1_wait(rho), rel=0.05)


def test_kingman_cases():
    assert mk.kingman_wait(0.8) == pytest.approx(mk.mm1_wait(0.8))  # M/M/1
    assert mk.kingman_wait(0.8, 1.0, 0.0) == pytest.approx(mk.mm1_wait(0.8) / 2)  # M/D/1 (P-K)
    assert mk.kingman_wait(0.8, 4.0, 1.0) == pytest.approx(2.5 * mk.mm1_wait(0.8))  # bursty arrivals


def test_erlang_c_hand_values():
    assert mk.erlang_c(1, 0.7) == pytest.approx(0.7)  # one server: P(wait) = rho
    assert mk.erlang_c(2, 0.5) == pytest.approx(1 / 3)  # a = 1: (1/2)/(1/2) over 1 + 1 + 1
    assert mk.erlang_c(300, 0.5) < 1e-12  # large pools at half load almost never queue, and no overflow


def test_mmc_wait_one_server_is_mm1_and_pooling_helps():
    assert mk.mmc_wait(1, 0.9) == pytest.approx(mk.mm1_wait(0.9))
    assert mk.mmc_wait(1, 0.9, cs2=0.0) == pytest.approx(mk.kingman_wait(0.9, 1.0, 0.0))
    assert mk.mmc_wait(2, 0.5) == pytest.approx((1 / 3) / (2 * 0.5))
    assert mk.mmc_wait(16, 0.9) < mk.mmc_wait(4, 0.9) < mk.mmc_wait(1, 0.9)


def test_availability():
    assert mk.k_of_n_availability(2, 1, 0.99) == pytest.approx(1 - 0.01**2)
    assert mk.k_of_n_availability(3, 3, 0.9) == pytest.approx(0.9**3)
    assert mk.k_of_n_availability(3, 2, 0.9) == pytest.approx(3 * 0.9**2 * 0.1 + 0.9**3)
    n = mk.replicas_for_availability(4, 0.99, 0.999)
    assert mk.k_of_n_availability(n, 4, 0.99) >= 0.999 > mk.k_of_n_availability(n - 1, 4, 0.99)
    assert mk.replicas_for_availability(1, 0.9, 0.999) == 3  # 1 - 0.1^3
    assert math.isclose(mk.k_of_n_availability(1, 1, 0.5), 0.5)


@pytest.mark.parametrize("call, match", [
    (lambda: mk.mm1_wait(1.0), "rho must satisfy"),
    (lambda: mk.mm1_wait(-0.1), "rho must satisfy"),
    (lambda: mk.kingman_wait(0.5, ca2=-1), "ca2"),
    (lambda: mk.mmc_wait(2, 0.5, cs2=math.inf), "cs2"),
    (lambda: mk.erlang_c(0, 0.5), "servers"),
    (lambda: mk.k_of_n_availability(2, 3, 0.9), r"k \(3\) replicas needed cannot exceed"),
    (lambda: mk.k_of_n_availability(2, 1, 1.0), "availability must be a probability"),
    (lambda: mk.replicas_for_availability(2, 0.9, 1), "target must be a probability"),
])
def test_errors_name_the_rule(call, match):
    with pytest.raises(ValueError, match=match):
        call()
