"""NF4, QLoRA's 4-bit NormalFloat: sixteen levels placed at quantiles of N(0, 1), and its storage cost.

A weight block of ``block_size`` values is divided by its largest magnitude (absmax), so it lies in
[-1, 1]; each value is stored as the 4-bit index of the nearest of sixteen levels. The levels are
quantiles of a standard normal, rescaled to [-1, 1], so that each level is used about equally often
when the weights are normal; eight sit at or below zero and nine at or above, so zero is exact.
bitsandbytes builds them with ``create_normal_map(offset=0.9677083)`` (``bitsandbytes/functional.py``)
and stores the result as a table in ``get_4bit_type("nf4")``.

The inverse normal CDF comes from Python's ``statistics.NormalDist`` (no scipy), so the browser
edition runs it.

Book: chapter "Weight quantization for serving", section "NF4".
"""
from __future__ import annotations

from statistics import NormalDist

import numpy as np

from .config import check_positive_int

#: bitsandbytes' default outermost quantile: the mean of 1 - 1/(2*15) and 1 - 1/(2*16).
NF4_OFFSET = 0.9677083


def nf4_levels(offset=NF4_OFFSET):
    """The sixteen NF4 levels, sorted, in [-1, 1], as bitsandbytes' ``create_normal_map`` builds them.

    Parameters
    ----------
    offset : float
        Outermost quantile, in (0.5, 1): the largest level before rescaling is ``Phi^-1(offset)``.

    Returns
    -------
    ndarray, shape (16,)
        Seven negative levels, 0, eight positive levels; the extremes are exactly -1 and 1.
    """
    if not 0.5 < offset < 1.0:
        raise ValueError(f"offset must lie strictly between 0.5 and 1, got {offset!r}")
    ppf = NormalDist().inv_cdf
    positive = [ppf(p) for p in np.linspace(offset, 0.5, 9)[:-1]]  # 8 quantiles above the median
    negative = [-ppf(p) for p in np.linspace(offset, 0.5, 8)[:-1]]  # 7 below it
    levels = np.sort(np.array(positive + [0.0] + negative))  # (16,)
    return levels / levels.max()


def quantize_nf4(w, block_size=64, levels=None):
    """Round ``w`` to NF4 with one absmax per block of ``block_size`` consecutive values.

    Parameters
    ----------
    w : array_like, any shape, size a multiple of ``block_size``
        The weights, flattened in C order into blocks (bitsandbytes' blockwise layout).
    block_size : int
        Values per absmax (bitsandbytes' default for 4-bit weights is 64).
    levels : ndarray, shape (16,), optional
        The code book; :func:`nf4_levels` by default.

    Returns
    -------
    codes : ndarray of uint8, shape (n_blocks, block_size)
        Index of the nearest level for each value.
    absmax : ndarray, shape (n_blocks,)
        Each block's largest magnitude (the scale).
    """
    block_size = check_positive_int("block_size", block_size)
    flat = np.asarray(w, dtype=np.float64).ravel()
    if flat.size == 0 or flat.size % block_size:
        raise ValueError(f"w's size ({flat.size}) must be a positive multiple of block_size ({block_size})")
    levels = nf4_levels() if levels is None else np.asarray(levels, dtype=np.float64)
    blocks = flat.reshape(-1, block_size)  # (n_blocks, block_size)
    absmax = np.abs(blocks).max(axis=1)
    safe = np.where(absmax > 0, absmax, 1.0)
    normed = blocks / safe[:, None]  # in [-1, 1]
    codes = np.abs(normed[..., None] - levels).argmin(axis=-1)  # (n_blocks, block_size): nearest level
    return codes.astype(np.uint8), absmax


def dequantize_nf4(codes, absmax, shape, levels=None):
    """``levels[codes] * absmax`` per block, back in ``shape``: what the matmul multiplies by."""
    levels = nf4_levels() if levels is None else np.asarray(levels, dtype=np.float64)
    return (levels[codes] * np.asarray(absmax)[:, None]).reshape(shape)


def double_quant_bits_per_weight(bits=4, block_size=64, scale_bits=8, block_size2=256, scale2_bits=32):
    """Stored bits per weight when the per-block scales are themselves quantized (QLoRA's double quantization).

    Each weight costs ``bits``; each block of ``block_size`` weights has one ``scale_bits`` scale; each
    group of ``block_size2`` scales has one ``scale2_bits`` second-level scale. QLoRA's setting
    (4-bit NF4, blocks of 64, 8-bit scales in groups of 256 with an FP32 constant) gives
    ``4 + 8/64 + 32/(64*256) = 4.127`` bits; without double quantization it is ``4 + 32/64 = 4.5``.
    """
    for name, value in (("bits", bits), ("block_size", block_size), ("block_size2", block_size2)):
        check_positive_int(name, value)
    if scale_bits < 0 or scale2_bits < 0:
        raise ValueError(f"scale_bits and scale2_bits must be >= 0, got {scale_bits} and {scale2_bits}")
    return bits + scale_bits / block_size + scale2_bits / (block_size * block_size2)
