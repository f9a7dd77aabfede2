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


def test_slowest_wavelength_at_a_million():
    assert round(2 * math.pi * 1_000_000.0 ** (126 / 128)) == 5063256


def test_matches_liu_closed_form_and_their_92():
    # Lemma 1 (OpenLMLab/scaling-rope README): d_extra = 2 ceil((d/2) log_10000(T_train / 2 pi)), 92 for LLaMA 2
    x = 64 * math.log(4096 / (2 * math.pi), 10000.0)
    assert 2 * _complete_pairs(10000.0) == 2 * math.ceil(x) == 92
    # below T_train / 2 pi (about 652) every pair turns: the closed form passes d, capped at 128
    assert 2 * math.ceil(64 * math.log(4096 / (2 * math.pi), 500.0)) > 128
    assert 2 * _complete_pairs(500.0) == 128
    assert _complete_pairs(4096 / (2 * math.pi)) == 64 and _complete_pairs(800.0) < 64


def test_reach_of_a_larger_base():
    # Theorem 3: above the critical base beta_0 the bound is T_extra = 2 pi beta^(d_extra / d)
    beta0_4k = 10000.0 ** (math.log(4096 / (2 * math.pi)) / math.log(4096 / (2 * math.pi)))
    beta0_16k = 10000.0 ** (math.log(16384 / (2 * math.pi)) / math.log(4096 / (2 * math.pi)))
    assert round(beta0_4k) == 10000 and round(beta0_16k) == 71738
    t_extra = 2 * math.pi * 1_000_000.0 ** (92 / 128)
    assert round(t_extra) == 129027
    assert 120_000 < t_extra < 256 * 1024  # about 128K, where the README's base-1e6 row goes from 7.07 to 76.82
