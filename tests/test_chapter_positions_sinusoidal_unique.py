"""positions-sinusoidal-unique: no two integer positions share the fastest pair; 710 is a near miss."""

import numpy as np


def test_fastest_pair_never_repeats_but_710_nearly_does():
    p = np.arange(1, 100_000)
    assert np.all(np.hypot(np.sin(p), np.cos(p) - 1) > 0)
    assert abs(710 - 113 * 2 * np.pi) < 1e-3
    assert round(float(np.sin(710)), 4) == 0.0001


def test_whole_vectors_stay_apart():
    d, n = 64, 512
    i = np.arange(d // 2)
    ang = np.arange(n)[:, None] / 10000.0 ** (2 * i / d)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    diff = pe[:, None, :] - pe[None, :, :]
    dist = np.sqrt((diff**2).sum(-1)) + np.diag(np.full(n, np.inf))
    assert round(float(dist.min()), 3) == 1.472
    ang710 = np.array([0.0, 710.0])[:, None] / 10000.0 ** (2 * i / d)
    assert round(float(np.sqrt(((np.sin(ang710[0]) - np.sin(ang710[1])) ** 2 + (np.cos(ang710[0]) - np.cos(ang710[1])) ** 2).sum())), 3) == 7.297
