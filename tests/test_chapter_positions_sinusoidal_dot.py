"""positions-sinusoidal-dot: PE_m . PE_n = sum_i cos(omega_i (m - n)), a function of the offset only."""

import numpy as np

import mha_kit as mk


def _table(n, d):
    # Vaswani et al. sec. 3.5 written out: PE[p, 2i] = sin(p w_i), PE[p, 2i+1] = cos(p w_i)
    ang = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)  # (n, d/2)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return pe


def test_dot_product_is_sum_of_cosines_of_the_offset():
    pe = _table(512, 64)
    assert np.allclose(mk.sinusoidal_positions(512, 64), pe)
    omega = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    gram = pe @ pe.T  # (512, 512)
    offsets = np.arange(512)[:, None] - np.arange(512)[None, :]
    assert np.allclose(gram, np.cos(offsets[..., None] * omega).sum(-1))


def test_same_offset_same_product_symmetric_and_self_is_half_d():
    pe = _table(512, 64)
    assert np.isclose(pe[300] @ pe[260], pe[40] @ pe[0])
    assert np.isclose(pe[260] @ pe[300], pe[300] @ pe[260])
    assert np.allclose(np.einsum("pd,pd->p", pe, pe), 32.0)


def test_a_learned_product_between_the_codes_breaks_the_symmetry():
    pe = _table(64, 16)
    w = np.random.default_rng(0).standard_normal((16, 16))  # a generic W_Q W_K^T
    s = pe @ w @ pe.T
    assert not np.allclose(s, s.T)
    assert not np.isclose(s[30, 20], s[10, 0])  # same offset, different score
