"""why_several_heads-noisy-keys: one averaging query against two copying heads, recomputed."""

import numpy as np


def test_ratio_is_exponential_in_key_length():
    beta, gamma = 20.0, 1.1
    s = np.array([beta * gamma, beta, 0.0, 0.0])
    p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    assert np.isclose(p[0] / p[1], np.exp(2.0))


def test_two_heads_are_robust_one_head_is_not():
    rng = np.random.default_rng(0)
    gamma = 1 + 0.5 * rng.normal(size=1000)
    beta = 20.0
    # one head: scores (beta*gamma, beta, 0, 0); two heads: (beta*gamma, 0, 0, 0) and (0, beta, 0, 0)
    one_a = 1 / (1 + np.exp(beta - beta * gamma) + 2 * np.exp(-beta * gamma))
    head1_a = np.exp(beta * gamma) / (np.exp(beta * gamma) + 3)
    head2_a = 1 / (1 + np.exp(beta) + 2)
    two_a = 0.5 * (head1_a + head2_a)
    one_near, two_near = np.mean(np.abs(one_a - 0.5) < 0.05), np.mean(np.abs(two_a - 0.5) < 0.05)
    assert f"{one_near:.0%}" == "2%" and f"{two_near:.0%}" == "96%"
