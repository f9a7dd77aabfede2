"""state_space_models-bilinear: the exercise's alpha (weight of the old point) is scipy's 1 - alpha.

scipy.signal.cont2discrete(method="gbt"): ad = solve(I - alpha dt A, I + (1 - alpha) dt A),
bd = solve(I - alpha dt A, dt B) (scipy/signal/_lti_conversion.py), written out here without scipy.
"""
import numpy as np


def course(a, b, dt, alpha):  # the chapter's rule: alpha weights f(h_{k-1})
    left = np.eye(len(a)) - (1 - alpha) * dt * a
    return np.linalg.solve(left, np.eye(len(a)) + alpha * dt * a), np.linalg.solve(left, dt * b)


def scipy_gbt(a, b, dt, alpha):  # scipy's rule: alpha weights the new point
    ima = np.eye(len(a)) - alpha * dt * a
    return np.linalg.solve(ima, np.eye(len(a)) + (1.0 - alpha) * dt * a), np.linalg.solve(ima, dt * b)


def test_course_alpha_is_scipy_one_minus_alpha():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 3)) - 3 * np.eye(3), rng.normal(size=(3, 1))
    for alpha in (0.0, 0.3, 0.5, 1.0):
        for x, y in zip(course(a, b, 0.2, alpha), scipy_gbt(a, b, 0.2, 1 - alpha)):
            assert np.allclose(x, y)
    assert np.allclose(course(a, b, 0.2, 1.0)[0], np.eye(3) + 0.2 * a)  # course alpha = 1: forward Euler
    assert np.allclose(scipy_gbt(a, b, 0.2, 0.0)[0], np.eye(3) + 0.2 * a)  # scipy alpha = 0: forward Euler
    assert not np.allclose(course(a, b, 0.2, 0.3)[0], scipy_gbt(a, b, 0.2, 0.3)[0])  # same number, different rule
