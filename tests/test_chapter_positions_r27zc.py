"""positions-rope-derivation: the norm of f(x, m) must not depend on m, and its phase must be linear in m,
for f(q, m) conj f(k, n) to depend on m - n only. Recomputed with cmath from the same seeded vectors,
guess by guess, against the chapter's stored outputs."""
import cmath
import json
import math
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "positions.ipynb"
THETA, OFFSET, TOP = 0.3, 3, 200


def _stdout():
    cells = json.loads(NB.read_text())["cells"]
    head = next(i for i, c in enumerate(cells) if "(positions-rope-derivation)=" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cells[head + 1]["outputs"] if o.get("name") == "stdout")


def _vectors():
    rng = np.random.default_rng(3)
    q2, k2 = rng.standard_normal(2), rng.standard_normal(2)
    return complex(*q2), complex(*k2), rng.standard_normal(64), rng.standard_normal(64)


GUESSES = {  # name as printed -> f(x, m)
    "norm (1 + m/100)": lambda x, m: (1 + m / 100) * x * cmath.exp(1j * m * THETA),
    "phase m^2 theta/10": lambda x, m: x * cmath.exp(1j * m * m * THETA / 10),
    "x e^{i m theta}": lambda x, m: x * cmath.exp(1j * m * THETA),
}


def _checks(f, q, k):
    at_eq = max(abs(f(q, m) * f(k, m).conjugate() - q * k.conjugate()) for m in range(TOP))
    steps = [cmath.phase(f(1, m) * f(1, m - 1).conjugate()) for m in range(1, TOP)]
    scores = [(f(q, m) * f(k, m - OFFSET).conjugate()).real for m in range(OFFSET, TOP)]
    return at_eq, max(steps) - min(steps), max(scores) - min(scores)


def _shown(x):
    return "below 1e-12" if x < 1e-12 else f"{x:.1e} (above 1e-12)"


def test_only_the_rotation_passes_every_step():
    q, k, _, _ = _vectors()
    results = {name: _checks(f, q, k) for name, f in GUESSES.items()}
    assert results["norm (1 + m/100)"][0] > 1 and results["norm (1 + m/100)"][2] > 1
    assert results["phase m^2 theta/10"][0] < 1e-12 < 1 < results["phase m^2 theta/10"][1]
    assert results["phase m^2 theta/10"][2] > 1
    assert max(results["x e^{i m theta}"]) < 1e-12
    lines = _stdout().splitlines()
    for name, (at_eq, steps, spread) in results.items():
        line = next(ln for ln in lines if ln.startswith(name))
        assert f"m = n: {_shown(at_eq)}" in line
        assert f"phase steps vary by {_shown(steps)}" in line
        assert line.endswith(f"score spread at m - n = 3: {_shown(spread)}")


def test_stacked_planes_score():
    _, _, q64, k64 = _vectors()
    # the real form: each plane (2i, 2i+1) rotated by m theta_i, then an ordinary dot product
    def rotate(x, m):
        out = []
        for i in range(32):
            a = m * 10000.0 ** (-2 * i / 64)
            out += [x[2 * i] * math.cos(a) - x[2 * i + 1] * math.sin(a), x[2 * i] * math.sin(a) + x[2 * i + 1] * math.cos(a)]
        return out

    scores = [sum(a * b for a, b in zip(rotate(q64, m), rotate(k64, m - OFFSET))) for m in (3, 105, 199)]
    assert max(scores) - min(scores) < 1e-10
    out = _stdout()
    assert f"score at m - n = 3: {scores[0]:+.6f}" in out
    assert "d = 64, 32 planes: score spread at m - n = 3: below 1e-12" in out


def test_reflection_keeps_the_real_score_only():
    """f(x, m) = x at even m, conj x at odd m: offset-only dot products, yet the imaginary part moves."""
    q, k, _, _ = _vectors()

    def flip(x, m):
        return x if m % 2 == 0 else x.conjugate()

    products = [flip(q, m) * flip(k, m - OFFSET).conjugate() for m in range(OFFSET, TOP)]
    real = [p.real for p in products]
    imag = [p.imag for p in products]
    assert max(real) - min(real) < 1e-12
    imag_spread = max(imag) - min(imag)
    assert imag_spread > 1
    assert abs(imag_spread - 2 * abs((q * k).imag)) < 1e-12  # Im(q k) at even m, Im(conj(q k)) at odd m
    out = _stdout()
    assert (f"reflection x, conj x: real score spread at m - n = 3: below 1e-12, "
            f"imaginary part spread: {imag_spread:.2f}") in out
    cells = json.loads(NB.read_text())["cells"]
    assert any("{glue:text}`rope_flip_imag_spread`" in "".join(c["source"]) for c in cells)
