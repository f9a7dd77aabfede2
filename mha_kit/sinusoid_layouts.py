"""The sinusoidal position table in tensor2tensor's layout: all sines, then all cosines.

Vaswani et al. (arXiv:1706.03762, sec. 3.5) interleave the pairs, a sine in column ``2i`` and its
cosine in ``2i + 1`` (:func:`mha_kit.sinusoidal_positions`). tensor2tensor's
``get_timing_signal_1d`` (``tensor2tensor/layers/common_attention.py``, v1.15.7) concatenates
``[sin(scaled_time), cos(scaled_time)]`` along the channels instead, and spaces its ``d/2``
timescales geometrically from ``min_timescale`` to exactly ``max_timescale``.

Book: chapter "Where positions come from".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def timing_signal_concat(num_positions, d_model, min_timescale=1.0, max_timescale=1.0e4):
    """tensor2tensor's ``get_timing_signal_1d`` in numpy: sines in the first half, cosines in the second.

    ``inv_timescale_i = min_timescale * exp(-i * log(max/min) / max(d/2 - 1, 1))`` for
    ``i = 0 .. d/2 - 1``, so the slowest wavelength is exactly ``2 pi max_timescale`` (the paper's
    ``10000**(-2i/d)`` stops one step short of it).

    Parameters
    ----------
    num_positions : int
        ``n``, positions ``0 .. n - 1``.
    d_model : int
        ``d``, even (tensor2tensor pads an odd width with a zero column; this function refuses it).
    min_timescale, max_timescale : float
        Positive, ``min_timescale <= max_timescale``.

    Returns
    -------
    ndarray, shape (n, d)
        Columns ``0 .. d/2 - 1`` are sines, ``d/2 .. d - 1`` the cosines of the same frequencies.
    """
    n = check_positive_int("num_positions", num_positions)
    d = check_positive_int("d_model", d_model)
    if d % 2:
        raise ValueError(f"d_model ({d}) must be even: the table holds d/2 sines and d/2 cosines")
    if not 0 < min_timescale <= max_timescale:
        raise ValueError(f"need 0 < min_timescale <= max_timescale; got {min_timescale} and {max_timescale}")
    half = d // 2
    increment = np.log(max_timescale / min_timescale) / max(half - 1, 1)
    inv_timescales = min_timescale * np.exp(-np.arange(half) * increment)  # (d/2,)
    scaled_time = np.arange(n)[:, None] * inv_timescales[None, :]  # (n, d/2)
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)  # (n, d)
