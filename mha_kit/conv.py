"""Convolution three ways: direct, im2col + GEMM, and Winograd's minimal filtering.

Deep-learning "convolution" is cross-correlation: ``y[p, q, k] = sum_{r,s,c} x[p+r, q+s, c] w[k, r, s, c]``
(NHWC activations, KRSC filters, CUTLASS's names). im2col copies every input patch into a row of a
``(P*Q, R*S*C)`` matrix, so each input value is stored up to ``R*S`` times; implicit GEMM (cuDNN,
CUTLASS) forms the same tiles on the fly in shared memory instead. Winograd's ``F(m, r)`` computes
``m`` outputs of an ``r``-tap filter with ``m + r - 1`` multiplications (Lavin and Gray 2016, Sec. 4).

Book: chapter "CUDA for inference engineers", section "A 2-D convolution kernel".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def _check(x, w):
    x, w = np.asarray(x), np.asarray(w)
    if x.ndim != 3 or w.ndim != 4 or x.shape[2] != w.shape[3]:
        raise ValueError(f"need x of shape (H, W, C) and w of shape (K, R, S, C) with the same C, got "
                         f"{x.shape} and {w.shape}")
    if w.shape[1] > x.shape[0] or w.shape[2] > x.shape[1]:
        raise ValueError(f"filter {w.shape[1:3]} larger than the input {x.shape[:2]}")
    return x, w


def conv2d_direct(x, w):
    """Direct stride-1, unpadded convolution (cross-correlation) of one NHWC image.

    Parameters
    ----------
    x : ndarray, shape ``(H, W, C)``
    w : ndarray, shape ``(K, R, S, C)``

    Returns
    -------
    ndarray, shape ``(H - R + 1, W - S + 1, K)``
    """
    x, w = _check(x, w)
    k, r, s, _ = w.shape
    p, q = x.shape[0] - r + 1, x.shape[1] - s + 1
    y = np.zeros((p, q, k), dtype=np.result_type(x, w))
    for i in range(r):  # one shifted window of x per filter tap, all outputs at once
        for j in range(s):
            y += x[i:i + p, j:j + q, :] @ w[:, i, j, :].T  # (P, Q, C) @ (C, K)
    return y


def im2col(x, r, s):
    """The ``(P*Q, R*S*C)`` patch matrix of ``x`` (row ``p*Q + q`` is the patch at ``(p, q)``).

    ``im2col(x, R, S) @ w.reshape(K, -1).T`` equals :func:`conv2d_direct` reshaped to ``(P*Q, K)``.
    """
    x = np.asarray(x)
    r, s = check_positive_int("r", r), check_positive_int("s", s)
    if x.ndim != 3 or r > x.shape[0] or s > x.shape[1]:
        raise ValueError(f"need x of shape (H, W, C) with H >= r and W >= s, got {x.shape}, r={r}, s={s}")
    p, q = x.shape[0] - r + 1, x.shape[1] - s + 1
    cols = np.stack([x[i:i + p, j:j + q, :] for i in range(r) for j in range(s)], axis=2)  # (P, Q, R*S, C)
    return cols.reshape(p * q, -1)  # (P*Q, R*S*C), tap-major then channel: matches w[k, r, s, c]


def winograd_f23(d, g):
    """Two outputs of a 3-tap filter from 4 inputs with 4 multiplications (Lavin and Gray, Eq. 5).

    Parameters
    ----------
    d : array_like, shape ``(4,)``, inputs
    g : array_like, shape ``(3,)``, filter

    Returns
    -------
    ndarray, shape ``(2,)``: ``[d0 g0 + d1 g1 + d2 g2, d1 g0 + d2 g1 + d3 g2]``
    """
    d, g = np.asarray(d, dtype=float), np.asarray(g, dtype=float)
    if d.shape != (4,) or g.shape != (3,):
        raise ValueError(f"F(2,3) takes 4 inputs and 3 taps, got shapes {d.shape} and {g.shape}")
    m1 = (d[0] - d[2]) * g[0]
    m2 = (d[1] + d[2]) * (g[0] + g[1] + g[2]) / 2  # the filter terms are precomputed once per filter
    m3 = (d[2] - d[1]) * (g[0] - g[1] + g[2]) / 2
    m4 = (d[1] - d[3]) * g[2]
    return np.array([m1 + m2 + m3, m2 - m3 - m4])


def winograd_multiplies(m, r) -> tuple[int, int]:
    """Multiplications for an ``m x m`` output tile of an ``r x r`` filter: ``((m+r-1)**2, m**2 r**2)``."""
    m, r = check_positive_int("m", m), check_positive_int("r", r)
    return (m + r - 1) ** 2, m * m * r * r


def halo_load_factor(tile, r) -> float:
    """Input values a ``tile x tile`` output block loads per output, stride 1: ``(tile + r - 1)**2 / tile**2``."""
    t, r = check_positive_int("tile", tile), check_positive_int("r", r)
    return (t + r - 1) ** 2 / t ** 2
