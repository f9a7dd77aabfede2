"""state_space_models-bilinear: the generalised bilinear rule, checked against its implicit equation."""

import numpy as np


def test_bilinear_matrices_solve_the_implicit_step():
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(3, 3)) - 2 * np.eye(3), rng.normal(size=(3, 1))
    h0, x, dt, al = rng.normal(size=(3, 1)), 0.7, 0.2, 0.3
    lhs_inv = np.linalg.inv(np.eye(3) - (1 - al) * dt * A)
    h1 = lhs_inv @ (np.eye(3) + al * dt * A) @ h0 + lhs_inv @ (dt * B) * x
    # h1 = h0 + dt (al (A h0 + B x) + (1 - al) (A h1 + B x))
    assert np.allclose(h1, h0 + dt * (al * (A @ h0 + B * x) + (1 - al) * (A @ h1 + B * x)))


def test_error_orders_and_stability():
    a = -np.array([1.0, 2.0, 3.0])
    euler = lambda d: np.abs(1 + d * a - np.exp(d * a)).max()  # noqa: E731
    trap = lambda d: np.abs((1 + d * a / 2) / (1 - d * a / 2) - np.exp(d * a)).max()  # noqa: E731
    assert 3.5 < euler(0.1) / euler(0.05) < 4.5
    assert 6.5 < trap(0.1) / trap(0.05) < 8.5
    assert f"{euler(0.1):.1e}" == "4.1e-02" and f"{trap(0.05):.1e}" == "2.4e-04"
    assert np.abs(1 + a).max() == 2.0
    assert np.all(np.abs((1 + a / 2) / (1 - a / 2)) < 1) and np.all(np.abs(1 / (1 - a)) < 1)
