"""The critical-dimension section of book/rope_scaling.ipynb: pairs that turn within the training length."""
import math


def _complete_pairs(base, r=128, trained=4096):
    # pair i has frequency base ** (-2 i / r) and wavelength 2 pi / frequency
    return sum(2 * math.pi * base ** (2 * i / r) <= trained for i in range(r // 2))


def test_counts_at_three_bases():
    assert _complete_pairs(500.0) == 64
    assert _complete_pairs(10000.0) == 46
    assert _complete_pairs(1_000_000.0) == 31


def test_slowest_wavelengths():
    assert round(2 * math.pi * 500.0 ** (126 / 128)) == 2851
    assert round(2 * math.pi * 10000.0 ** (126 / 128)) == 54410
