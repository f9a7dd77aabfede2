"""positions-sinusoidal: PE(p + k) = PE(p) M_k with M_k block-diagonal, each block a rotation by k omega_i.

The blocks come from the angle-addition identities (Vaswani et al. 2017, sec. 3.5 states the linearity);
the table here is built from the paper's formula, not from mha_kit.
"""

import numpy as np


def table(n, d):
    ang = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)  # (n, d/2)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)  # sine in column 2i, cosine in 2i + 1
    return pe


def rotation_matrix(k, d):
    m = np.zeros((d, d))
    for i in range(d // 2):
        w = k / 10000.0 ** (2 * i / d)
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(w), -np.sin(w)], [np.sin(w), np.cos(w)]]
    return m


def test_derived_matrix_shifts_every_position():
    for d in (2, 16, 64):
        pe = table(300, d)
        for k in (1, 7, 100):
            m = rotation_matrix(k, d)
            assert np.allclose(pe[:-k] @ m, pe[k:], atol=1e-9)
            assert np.allclose(m @ m.T, np.eye(d), atol=1e-12)  # each block a rotation: orthogonal


def test_first_block_is_the_printed_one():
    m = rotation_matrix(7, 16)
    assert np.round(m[:2, :2], 4).tolist() == [[0.7539, -0.657], [0.657, 0.7539]]
    pe = table(100, 16)
    fit, *_ = np.linalg.lstsq(pe[:60], pe[7:67], rcond=None)
    assert np.allclose(fit[:2, :2], m[:2, :2], atol=1e-6)


def test_wrong_sign_fails():
    m = rotation_matrix(7, 16).T  # rotation the other way: PE(p - 7), not PE(p + 7)
    pe = table(100, 16)
    assert not np.allclose(pe[:-7] @ m, pe[7:], atol=1e-3)
