"""Low-precision KV cache: FP8 (E4M3, E5M2) and integer (int8, int4) storage with scales.

A cache stored in ``fmt`` keeps, for each group of numbers, one scale ``amax / fmt_max`` (``amax``
the group's largest magnitude) and the numbers ``x / scale`` rounded to ``fmt``; reading
multiplies back. The groups are set by ``axis``: one scale per ``"tensor"``, per ``"head"``, per
``"token"`` (each token's ``d_h`` numbers in one head) or per ``"channel"`` (each of the ``d_h``
channels of one head across the tokens). Rounding is round-to-nearest-even, as the hardware
casts do: FP8 values come from ``ml_dtypes``' own casts (the numpy dtypes JAX uses, through
:func:`mha_kit.numerics.storage_dtype`, which imports it when first needed), integers
from :func:`numpy.rint` with a symmetric range (``-127..127`` for int8, ``-7..7`` for int4), so
zero stays exactly zero.

Scales are kept in float64 here; a server stores them in fp32 or bf16
(:func:`kv_scale_count` counts them for the bytes).

Book: chapter "Low-precision KV cache".
"""
from __future__ import annotations

import numpy as np

from .attention import grouped_attention
from .numerics import FLOAT_FORMATS, storage_dtype
from .weight_quant import round_minifloat

#: The FP8 formats a cache may use: OCP E4M3 ("e4m3fn": no infinities) and E5M2, whose limits and
#: ml_dtypes types are those of :data:`mha_kit.FLOAT_FORMATS`.
_FP8 = ("fp8_e4m3", "fp8_e5m2")

#: Largest magnitude each format stores: the FP8 formats' largest finite numbers (448 and 57,344,
#: derived from their bit layouts) and the symmetric integer ranges.
KV_FORMAT_MAX = {**{fmt: FLOAT_FORMATS[fmt].max_finite for fmt in _FP8}, "int8": 127.0, "int4": 7.0}

#: Axes of a ``(..., s, d_h)`` cache that one scale spans, for each grouping.
SCALE_AXES = {"tensor": None, "head": (-2, -1), "token": (-1,), "channel": (-2,)}


def _check_cache(x, fmt, axis):
    x = np.asarray(x)
    if fmt not in KV_FORMAT_MAX:
        raise ValueError(f"fmt must be one of {sorted(KV_FORMAT_MAX)}, got {fmt!r}")
    if axis not in SCALE_AXES:
        raise ValueError(f"axis must be one of {sorted(SCALE_AXES)}, got {axis!r}")
    if x.ndim < 2 or x.size == 0:
        raise ValueError(f"expected a cache of shape (..., s, d_h) with at least one token, got {x.shape}")
    if not np.issubdtype(x.dtype, np.floating) and not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"expected a real-valued cache, got dtype {x.dtype}")
    if not np.isfinite(x).all():
        raise ValueError("cannot quantize a cache that contains NaN or inf")
    return x.astype(np.float64)


def quantize_kv_codes(x, fmt, axis="token"):
    """Quantize a cache: the stored codes and their scales.

    Parameters
    ----------
    x : ndarray, shape (..., s, d_h)
        Keys or values, e.g. ``(h_kv, s, d_h)`` for one layer.
    fmt : {"fp8_e4m3", "fp8_e5m2", "int8", "int4"}
    axis : {"token", "channel", "head", "tensor"}
        What one scale covers (:data:`SCALE_AXES`).

    Returns
    -------
    codes : ndarray, shape (..., s, d_h)
        ``ml_dtypes`` float8 for FP8, ``int8`` for int8 and int4 (int4 codes lie in ``-7..7``).
    scale : ndarray of float64, broadcastable to ``x``
        ``amax / KV_FORMAT_MAX[fmt]`` per group (1 for a group of zeros); ``x ~ codes * scale``.

    Book: chapter "Low-precision KV cache".
    """
    x = _check_cache(x, fmt, axis)
    amax = np.abs(x).max(axis=SCALE_AXES[axis], keepdims=True)
    top = KV_FORMAT_MAX[fmt]
    scale = np.where(amax > 0, amax / top, 1.0)
    scaled = np.clip(x / scale, -top, top)  # x / scale may exceed top by a rounding error
    if fmt in _FP8:
        return scaled.astype(storage_dtype(fmt)), scale
    return np.rint(scaled).astype(np.int8), scale


def quantize_kv(x, fmt, axis="token"):
    """The cache as a reader sees it after storing it in ``fmt``: quantized, then dequantized.

    Parameters
    ----------
    x : ndarray, shape (..., s, d_h)
    fmt : {"fp8_e4m3", "fp8_e5m2", "int8", "int4"}
    axis : {"token", "channel", "head", "tensor"}
        One scale per token (each token's ``d_h`` numbers), per channel (each of the ``d_h``
        channels across the tokens), per head, or one for the whole array.

    Returns
    -------
    ndarray of float64, shape (..., s, d_h)

    Examples
    --------
    >>> import numpy as np, mha_kit as mk
    >>> mk.quantize_kv(np.array([[1.0, -0.5, 0.3]]), "int4", "token")  # steps of 1/7
    array([[ 1.        , -0.57142857,  0.28571429]])

    Book: chapter "Low-precision KV cache".
    """
    codes, scale = quantize_kv_codes(x, fmt, axis)
    return codes.astype(np.float64) * scale


def quantize_e4m3(x, axis="token"):
    """FP8 E4M3 round trip of a cache in numpy alone: the values a reader gets back, and their scales.

    The scales of :func:`quantize_kv_codes` with ``"fp8_e4m3"``, ``amax / 448`` per group of
    ``axis`` (1 for a group of zeros), and the scaled numbers rounded by
    :func:`mha_kit.round_minifloat` (nearest, ties to even, subnormals) instead of ``ml_dtypes``'
    cast: the same values as ``quantize_kv(x, "fp8_e4m3", axis)`` (tested), without ``ml_dtypes``,
    so the browser edition runs it.

    Parameters
    ----------
    x : ndarray, shape (..., s, d_h)
    axis : {"token", "channel", "head", "tensor"}
        What one scale covers (:data:`SCALE_AXES`).

    Returns
    -------
    values : ndarray of float64, shape (..., s, d_h)
        ``codes * scale``: what attention reads.
    scale : ndarray of float64, broadcastable to ``x``

    Book: chapter "Low-precision KV cache".
    """
    x = _check_cache(x, "fp8_e4m3", axis)
    amax = np.abs(x).max(axis=SCALE_AXES[axis], keepdims=True)
    scale = np.where(amax > 0, amax / KV_FORMAT_MAX["fp8_e4m3"], 1.0)
    return round_minifloat(x / scale, "e4m3") * scale, scale


def kv_scale_count(shape, axis) -> int:
    """Scales :func:`quantize_kv_codes` keeps for an array of ``shape`` ``(..., s, d_h)`` grouped by ``axis``.

    One per token: ``prod(shape[:-1])``; per channel: ``prod(shape[:-2]) * d_h``; per head:
    ``prod(shape[:-2])``; per tensor: 1.
    """
    shape = tuple(int(n) for n in shape)
    if len(shape) < 2 or min(shape) < 1:
        raise ValueError(f"expected a shape (..., s, d_h) with every size at least 1, got {shape}")
    if axis not in SCALE_AXES:
        raise ValueError(f"axis must be one of {sorted(SCALE_AXES)}, got {axis!r}")
    if SCALE_AXES[axis] is None:
        return 1
    kept = [n for i, n in enumerate(shape) if i - len(shape) not in SCALE_AXES[axis]]
    return int(np.prod(kept, dtype=np.int64))


def attention_error(q, k, v, fmt, k_axis="channel", v_axis="token", mask=None) -> float:
    """Relative change of the attention output when ``k`` and ``v`` are read back from a ``fmt`` cache.

    ``||o_q - o|| / ||o||`` with ``o`` from :func:`mha_kit.grouped_attention` on the exact cache and
    ``o_q`` on :func:`quantize_kv` of the keys (scales along ``k_axis``) and the values
    (``v_axis``). The queries stay exact, as in a cache that stores only keys and values at low
    precision.

    Parameters
    ----------
    q : ndarray, shape (h, n, d_h)
    k, v : ndarray, shape (h_kv, s, d_h)
    fmt : {"fp8_e4m3", "fp8_e5m2", "int8", "int4"}
    k_axis, v_axis : {"token", "channel", "head", "tensor"} or None
        What one scale covers; ``None`` keeps that tensor exact (to see the keys' or the values'
        share of the error alone). KIVI's choice is the default: keys per channel, values per token.
    mask : ndarray of bool, broadcastable to (n, s), optional

    Book: chapter "Low-precision KV cache".
    """
    exact, _ = grouped_attention(q, k, v, mask)
    k_read = k if k_axis is None else quantize_kv(k, fmt, k_axis)
    v_read = v if v_axis is None else quantize_kv(v, fmt, v_axis)
    approx, _ = grouped_attention(q, k_read, v_read, mask)
    return float(np.linalg.norm(approx - exact) / np.linalg.norm(exact))
