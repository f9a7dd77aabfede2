"""Softmax numerics: number formats from their bit layouts, soft-capping, QK-norm, attention entropy.

Three traps decide which tricks a model needs, and each belongs to a number format:

* **range**: ``exp`` of a score above ``log(max)`` overflows (float16: above about 11.09;
  bfloat16 has float32's exponent and overflows only above about 88.7);
* **precision**: bfloat16 keeps 8 significant bits, so a sum of many small terms stops growing;
* **scale**: FP8 E4M3 tops out at 448, so every tensor needs a scale factor.

:class:`FloatFormat` derives every limit from the exponent and mantissa widths (the teaching
computation; the tests hold it against ``ml_dtypes.finfo``). Rounding is not re-derived:
:func:`round_to_format` casts to the dtype that stores the format, NumPy's own for fp32 and fp16,
``ml_dtypes``' for bf16 and the two FP8 formats (imported when first needed, so the fp32 and fp16
paths work without it).

Book: chapter "Softmax numerics in current models".
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .attention import softmax
from .config import check_positive_int


@dataclass(frozen=True, kw_only=True)
class FloatFormat:
    """A binary floating-point format: sign, ``exponent_bits``, ``mantissa_bits`` (stored fraction).

    ``ieee_special``: the top exponent is reserved for infinities and NaN (IEEE 754 style). FP8
    E4M3 instead keeps no infinity and only one NaN mantissa, so its top exponent holds numbers.

    Book: chapter "Softmax numerics in current models".
    """

    name: str  # key of FLOAT_FORMATS
    exponent_bits: int
    mantissa_bits: int  # stored fraction bits; significant bits are one more
    ieee_special: bool  # top exponent reserved for inf and NaN
    dtype: str  # the type that stores it: numpy's "float32"/"float16", else an ml_dtypes name
    cite: str  # references.bib key of the format's definition

    def __post_init__(self):
        for key in ("exponent_bits", "mantissa_bits"):
            object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))

    @property
    def bias(self) -> int:
        """Exponent bias, ``2**(exponent_bits - 1) - 1``."""
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max_finite(self) -> float:
        """The largest finite number."""
        if self.ieee_special:  # top exponent reserved; every mantissa of the one below
            return (2 - 2.0 ** -self.mantissa_bits) * 2.0 ** (2 ** self.exponent_bits - 2 - self.bias)
        # top exponent holds numbers, but its all-ones mantissa is NaN
        return (2 - 2.0 ** (1 - self.mantissa_bits)) * 2.0 ** (2 ** self.exponent_bits - 1 - self.bias)

    @property
    def smallest_normal(self) -> float:
        """The smallest positive normal number, ``2**(1 - bias)``."""
        return 2.0 ** (1 - self.bias)

    @property
    def smallest_subnormal(self) -> float:
        """The smallest positive number, ``2**(1 - bias - mantissa_bits)``: one step below the smallest normal."""
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def epsilon(self) -> float:
        """Gap between 1 and the next number, ``2**-mantissa_bits``."""
        return 2.0 ** -self.mantissa_bits

    @property
    def exp_limit(self) -> float:
        """Largest ``x`` whose ``exp(x)`` is finite in this format: ``log(max_finite)``."""
        return math.log(self.max_finite)


_FORMATS = (
    FloatFormat(name="fp32", exponent_bits=8, mantissa_bits=23, ieee_special=True, dtype="float32", cite="ieee754"),
    FloatFormat(name="bf16", exponent_bits=8, mantissa_bits=7, ieee_special=True, dtype="bfloat16",
                cite="kalamkar2019bfloat16"),
    FloatFormat(name="fp16", exponent_bits=5, mantissa_bits=10, ieee_special=True, dtype="float16", cite="ieee754"),
    FloatFormat(name="fp8_e5m2", exponent_bits=5, mantissa_bits=2, ieee_special=True, dtype="float8_e5m2",
                cite="micikevicius2022fp8"),
    FloatFormat(name="fp8_e4m3", exponent_bits=4, mantissa_bits=3, ieee_special=False, dtype="float8_e4m3fn",
                cite="micikevicius2022fp8"),
)

#: Formats NumPy stores itself; the others need ml_dtypes.
_NUMPY_DTYPES = ("float32", "float16")

#: Read-only mapping from a format name to its :class:`FloatFormat`.
FLOAT_FORMATS = MappingProxyType({fmt.name: fmt for fmt in _FORMATS})


def _format(fmt):
    if isinstance(fmt, FloatFormat):
        return fmt
    try:
        return FLOAT_FORMATS[fmt]
    except (KeyError, TypeError):
        raise ValueError(f"unknown float format {fmt!r}; use one of {list(FLOAT_FORMATS)}") from None


def storage_dtype(fmt):
    """The NumPy dtype that stores ``fmt``: ``float32`` and ``float16`` from NumPy, the rest from ml_dtypes.

    ``ml_dtypes`` (the dtypes JAX uses: ``bfloat16``, ``float8_e5m2``, ``float8_e4m3fn``) is imported
    here, on first use, so that code needing only fp32 or fp16 runs without it.

    Raises
    ------
    ImportError
        For bf16 or an FP8 format when ``ml_dtypes`` is not installed, naming the package.

    Book: chapters "Softmax numerics in current models" and "Low-precision KV cache".
    """
    fmt = _format(fmt)
    if fmt.dtype in _NUMPY_DTYPES:
        return np.dtype(fmt.dtype)
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError(f"format {fmt.name!r} needs the package ml_dtypes for its {fmt.dtype} type "
                          "(pip install ml-dtypes); fp32 and fp16 work without it") from None
    return np.dtype(getattr(ml_dtypes, fmt.dtype))


def round_to_format(x, fmt):
    """Round float64 numbers to the nearest number of ``fmt`` (ties to even) by casting to its dtype.

    The cast is NumPy's for fp32 and fp16 and ``ml_dtypes``' for bf16 and FP8
    (:func:`storage_dtype`), so the result is what those libraries store: subnormals below the
    smallest normal, and beyond the largest finite number ``inf`` (IEEE-style formats) or NaN
    (E4M3, which has no infinity), like a non-saturating cast. Casting back to float64 is exact.

    Parameters
    ----------
    x : array_like of float
    fmt : str or FloatFormat
        A name of :data:`FLOAT_FORMATS`.

    Returns
    -------
    ndarray of float64, same shape as ``x``: the rounded values.

    Book: chapter "Softmax numerics in current models".
    """
    dtype, x = storage_dtype(fmt), np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf or NaN is the answer, not a warning
        return x.astype(dtype).astype(np.float64)


def running_sum(values, fmt):
    """Add ``values`` one at a time, rounding the total to ``fmt`` after each addition.

    What an accumulator kept in a low-precision format does: once the total is large, an
    addend smaller than half its step is lost. Returns the final total (float64).

    Book: chapter "Softmax numerics in current models".
    """
    fmt, total = _format(fmt), 0.0
    for value in round_to_format(np.ravel(values), fmt):
        total = float(round_to_format(total + value, fmt))
    return total


def softmax_in_format(x, fmt, subtract_max=True):
    """Softmax of ``x`` along the last axis with every intermediate rounded to ``fmt``.

    With ``subtract_max=False`` the exponentials are taken of the raw scores, and a score above
    ``fmt``'s :attr:`~FloatFormat.exp_limit` turns into ``inf``, the denominator too, and the
    row into ``inf / inf = NaN`` for that key and ``0`` for the others (returned, not raised,
    and without a warning).

    Book: chapter "Softmax numerics in current models".
    """
    fmt = _format(fmt)

    def r(a):  # every intermediate is stored in fmt
        return round_to_format(a, fmt)

    x = r(x)
    shifted = r(x - x.max(axis=-1, keepdims=True)) if subtract_max else x
    with np.errstate(over="ignore", invalid="ignore"):
        e = r(np.exp(shifted))
        return r(e / r(e.sum(axis=-1, keepdims=True)))


def _check_cap(cap):
    if isinstance(cap, bool) or not isinstance(cap, numbers.Real) or not 0 < cap < math.inf:
        raise ValueError(f"cap must be a positive finite number, got {cap!r}")
    return float(cap)


def soft_cap(x, cap):
    """Logit soft-capping, ``cap * tanh(x / cap)``: near ``x`` for small ``|x|``, never beyond ``cap``.

    Gemma 2 caps its attention scores at 50.0 and its output logits at 30.0
    (``mk.MODEL_FACTS["gemma-2-9b"].attn_logit_softcap``, ``.final_logit_softcap``).

    Parameters
    ----------
    x : array_like
    cap : float
        Positive.

    Returns
    -------
    ndarray, same shape as ``x``, in ``(-cap, cap)``.

    Book: chapter "Softmax numerics in current models".
    """
    cap = _check_cap(cap)
    return cap * np.tanh(np.asarray(x) / cap)


def soft_cap_grad(x, cap):
    """Derivative of :func:`soft_cap` with respect to ``x``: ``1 - tanh(x / cap)**2``.

    1 at ``x = 0``, about 0.42 at ``x = cap``, and vanishing beyond: a capped score that is
    already large barely moves.

    Book: chapter "Softmax numerics in current models".
    """
    cap = _check_cap(cap)
    return 1.0 - np.tanh(np.asarray(x) / cap) ** 2


def rms_norm(x, weight=None, eps=1e-6):
    """RMSNorm over the last axis: ``x / sqrt(mean(x**2) + eps) * weight``.

    QK-norm applies it to the queries and keys before the scores (Gemma 3 and Qwen3 per head,
    over ``d_h``; OLMo 2 over the whole projection). Without a weight each row has RMS 1, so a
    row of ``d_h`` numbers has length ``sqrt(d_h)``.

    Parameters
    ----------
    x : ndarray, shape (..., d)
    weight : ndarray, shape (d,), optional
        Learned gain; ones if omitted.
    eps : float

    Book: chapter "Softmax numerics in current models".
    """
    x = np.asarray(x)
    x = x.astype(np.result_type(x.dtype, np.float32), copy=False)  # ints -> float64, float32 stays
    out = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    if weight is not None:
        weight = np.asarray(weight)
        if weight.shape != x.shape[-1:]:
            raise ValueError(f"weight must have shape ({x.shape[-1]},) to match the last axis of x, got {weight.shape}")
        out = out * weight
    return out


def attention_entropy(scores):
    """Entropy (nats) of the softmax of each row of ``scores``: ``log(s)`` when uniform, 0 when one-hot.

    Parameters
    ----------
    scores : ndarray, shape (..., s)

    Returns
    -------
    ndarray, shape (...)

    Book: chapter "Softmax numerics in current models".
    """
    p = softmax(scores)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)  # 0 log 0 = 0
    return terms.sum(axis=-1)
