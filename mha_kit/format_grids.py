"""Integer against floating-point grids of the same width: where each one's rounding error goes.

A block format stores codes on a fixed grid and one scale per block: ``x ~ scale * code``. With the
absmax scale the block's largest magnitude lands on the grid's largest value, so a grid can be
studied on ``[-1, 1]`` after dividing it by that value: INT4's 15 levels ``k / 7``, FP4 E2M1's
``{0, 0.5, 1, 1.5, 2, 3, 4, 6} / 6``. The integer grid has one step everywhere; the floating-point
grid halves its step in each lower binade, so it is fine near zero and coarse near the top.

Everything is float64 numpy (1.25 features only), so the browser edition runs it.

Book: chapter "Weight quantization for serving", section "Why uniformly spread values suit INT4
better than FP4".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int
from .weight_quant import MINIFLOATS, round_minifloat

#: Element formats of :func:`round_blocks`: symmetric integers (largest code) and OCP minifloats.
BLOCK_ELEMENTS = {"int4": 7, "int8": 127, "e2m1": None, "e4m3": None}


def uniform_rounding_mse(levels) -> float:
    """Mean squared error of rounding ``x ~ Uniform[-1, 1]`` to the nearest of a symmetric grid.

    By symmetry only ``[0, 1]`` counts; an interval ``[a, b]`` between neighbouring levels holds a
    share ``b - a`` of the values, whose error is uniform on ``[-(b - a)/2, (b - a)/2]`` with mean
    square ``(b - a)**2 / 12``, so the MSE is ``sum((b - a)**3) / 12``.

    Parameters
    ----------
    levels : array_like, shape (n,)
        The grid's non-negative levels, increasing, from 0 to 1 (a grid divided by its largest value).

    Returns
    -------
    float

    Book: chapter "Weight quantization for serving".
    """
    g = np.asarray(levels, dtype=np.float64)
    if g.ndim != 1 or g.size < 2 or g[0] != 0.0 or g[-1] != 1.0 or np.any(np.diff(g) <= 0):
        raise ValueError(f"levels must increase strictly from 0 to 1, got {np.asarray(levels).tolist()}")
    return float(np.sum(np.diff(g) ** 3) / 12.0)


def round_blocks(x, fmt, block):
    """Absmax-scaled round trip of ``x`` in blocks along the last axis, with an exact (unrounded) scale.

    ``scale = max|x_block| / top`` with ``top`` the element format's largest value (7 for int4, 127
    for int8, 6 for E2M1, 448 for E4M3), then each element is rounded to the format's nearest value,
    so that two formats are compared on their element grids alone.

    Parameters
    ----------
    x : ndarray, shape (..., n), n a multiple of ``block``
    fmt : {"int4", "int8", "e2m1", "e4m3"}
    block : int

    Returns
    -------
    ndarray of float64, shape of ``x``

    Book: chapter "Weight quantization for serving".
    """
    if fmt not in BLOCK_ELEMENTS:
        raise ValueError(f"fmt must be one of {sorted(BLOCK_ELEMENTS)}, got {fmt!r}")
    block = check_positive_int("block", block)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] % block or not np.isfinite(x).all():
        raise ValueError(f"x must be finite with a last axis that is a multiple of block={block}, got {x.shape}")
    top = BLOCK_ELEMENTS[fmt] or MINIFLOATS[fmt][2]
    xb = x.reshape(*x.shape[:-1], -1, block)  # (..., n / block, block)
    amax = np.abs(xb).max(axis=-1, keepdims=True)
    scale = np.where(amax > 0, amax / top, 1.0)
    codes = np.rint(xb / scale) if BLOCK_ELEMENTS[fmt] else round_minifloat(xb / scale, fmt)
    return (codes * scale).reshape(x.shape)


def qsnr_db(x, x_hat) -> float:
    """Quantization signal-to-noise ratio ``10 log10(sum x**2 / sum (x - x_hat)**2)`` in dB (inf if exact)."""
    x, x_hat = np.asarray(x, dtype=np.float64), np.asarray(x_hat, dtype=np.float64)
    if x.shape != x_hat.shape or x.size == 0 or not np.any(x):
        raise ValueError(f"x and x_hat must have the same shape and x must not be all zero, "
                         f"got shapes {x.shape} and {x_hat.shape}")
    noise = float(np.sum((x - x_hat) ** 2))
    return float("inf") if noise == 0.0 else float(10.0 * np.log10(np.sum(x**2) / noise))
