"""Claims of positions recomputed by hand: the sinusoidal wavelengths form a geometric ladder with
the same number of pairs per decade (Vaswani et al. 2017, sec. 3.5: 2 pi to 10000 * 2 pi), and evenly
spaced frequencies between the same ends crowd onto short wavelengths."""
import math


def _bands(wavelengths):
    edges = [2 * math.pi, 10, 100, 1000, 10000, 2 * math.pi * 10000 * 1.0001]
    return [sum(lo <= w < hi for w in wavelengths) for lo, hi in zip(edges, edges[1:])]


def test_geometric_ladder_gives_each_decade_the_same_pairs():
    d = 512
    omega = [10000 ** (-2 * i / d) for i in range(d // 2)]
    wavelengths = [2 * math.pi / w for w in omega]
    assert round(wavelengths[1] / wavelengths[0], 4) == 1.0366  # 10000 ** (2 / 512)
    assert round(wavelengths[-1]) == 60611
    assert _bands(wavelengths) == [13, 64, 64, 64, 51]


def test_even_frequencies_crowd_short_wavelengths():
    d = 512
    hi, lo = 1.0, 10000 ** (-2 * (d // 2 - 1) / d)
    even = [hi + (lo - hi) * i / (d // 2 - 1) for i in range(d // 2)]
    assert _bands([2 * math.pi / w for w in even]) == [95, 145, 14, 1, 1]
