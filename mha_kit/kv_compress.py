"""Post-training KV-cache compression that stacks two cuts: MiniKV's and xKV's arithmetic.

* :func:`group_quant_bits`: stored bits per cached number of a group-quantized cache with its
  scale and zero point counted (KIVI's asymmetric quantizer, which MiniKV reuses with groups of 16).
* :func:`cross_layer_svd`: xKV's factorization of a group of layers' caches, concatenated along
  the feature axis, into one token factor shared by the layers and one reconstruction matrix per
  layer (the truncated SVD of the reference code's ``fake_svd``).
* :func:`cross_layer_svd_numbers`: the numbers that factorization stores, against the full cache.

Book: chapter "Beyond the KV cache", sections "MiniKV" and "xKV".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def group_quant_bits(bits, group_size, scale_bits=16, zero_point=True) -> float:
    """Stored bits per cached number when each group of ``group_size`` numbers shares a scale.

    Parameters
    ----------
    bits : int
        Bits of one quantized number (2 in MiniKV and KIVI-2).
    group_size : int
        Numbers per group; each group stores one scale and, if ``zero_point``, one zero point.
    scale_bits : int
        Bits of the scale and of the zero point (16: KIVI keeps both in fp16).
    zero_point : bool
        Asymmetric quantization (scale and minimum, KIVI) or symmetric (scale only).

    Returns
    -------
    float
        ``bits + scale_bits * (2 if zero_point else 1) / group_size``.
    """
    for name, value in (("bits", bits), ("group_size", group_size), ("scale_bits", scale_bits)):
        check_positive_int(name, value)
    return bits + scale_bits * (2 if zero_point else 1) / group_size


def cross_layer_svd(caches, rank):
    """Factor a group of layers' caches jointly, as xKV does: one token factor, one matrix per layer.

    Parameters
    ----------
    caches : array, shape (G, s, w)
        The keys (or values) of ``G`` layers for ``s`` tokens, ``w = h_kv * d_h`` numbers a layer.
    rank : int
        Rank kept, ``1 <= rank <= min(s, G * w)``.

    Returns
    -------
    tokens : array, shape (s, rank)
        ``U_r S_r``: one row of ``rank`` numbers per token, shared by the ``G`` layers.
    per_layer : array, shape (G, rank, w)
        ``V_r^T`` split by layer: layer ``g``'s cache is approximated by ``tokens @ per_layer[g]``.
    """
    x = np.asarray(caches, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"caches must have shape (G, s, w), got {x.shape}")
    g, s, w = x.shape
    r = check_positive_int("rank", rank)
    if r > min(s, g * w):
        raise ValueError(f"rank ({r}) must be at most min(s, G * w) = {min(s, g * w)}")
    joined = x.transpose(1, 0, 2).reshape(s, g * w)  # (s, G w): the layers side by side, as fake_svd does
    u, sigma, vt = np.linalg.svd(joined, full_matrices=False)
    per_layer = vt[:r].reshape(r, g, w).transpose(1, 0, 2)  # (G, r, w)
    return u[:, :r] * sigma[:r], per_layer


def cross_layer_svd_numbers(num_tokens, num_layers, width, rank) -> tuple:
    """Numbers stored by a rank-``rank`` factorization of ``num_layers`` layers' caches, and the full count.

    The token factor holds ``num_tokens * rank`` numbers; the reconstruction matrices
    ``rank * num_layers * width``, fixed once the prompt is factored. The full cache holds
    ``num_tokens * num_layers * width``. Apply it to keys and to values separately.

    Returns
    -------
    (int, int)
        ``(stored, full)``.
    """
    s, g = check_positive_int("num_tokens", num_tokens), check_positive_int("num_layers", num_layers)
    w, r = check_positive_int("width", width), check_positive_int("rank", rank)
    if r > min(s, g * w):
        raise ValueError(f"rank ({r}) must be at most min(num_tokens, num_layers * width) = {min(s, g * w)}")
    return s * r + r * g * w, s * g * w
