"""Units: one table of number-format sizes, and formatting of bytes and large integers.

KiB = 1,024 bytes (binary); KB = 1,000 bytes (decimal). Functions that return sizes return
bytes as ``int``.
"""
from __future__ import annotations

import numbers

#: Bits per stored element for each number-format name (the ``fmt`` of every byte counter).
DTYPE_BITS = {
    "fp32": 32, "float32": 32,
    "bf16": 16, "bfloat16": 16, "fp16": 16, "float16": 16,
    "fp8": 8, "int8": 8,
    "fp8_e4m3": 8, "fp8_e5m2": 8,  # the two FP8 formats by name (mha_kit.quantize_kv)
    "int4": 4,
}

_BINARY = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_DECIMAL = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def dtype_bits(fmt) -> int:
    """Bits per element: a name from :data:`DTYPE_BITS` or a positive integer number of bits.

    DeepSeek-V2 stores its cache at about 6 bits per element, so ``dtype_bits(6) == 6``.
    """
    if isinstance(fmt, str):
        try:
            return DTYPE_BITS[fmt.lower()]
        except KeyError:
            raise ValueError(f"unknown number format {fmt!r}; use one of {sorted(DTYPE_BITS)} or a number of bits") from None
    if isinstance(fmt, bool) or not isinstance(fmt, numbers.Integral) or fmt <= 0:
        raise ValueError(f"fmt must be a format name such as 'bf16' or a positive integer number of bits, got {fmt!r}")
    return int(fmt)


def elements_to_bytes(num_elements: int, fmt="bf16") -> int:
    """Bytes needed for ``num_elements`` numbers of ``fmt``, rounded up to a whole byte."""
    if isinstance(num_elements, bool) or not isinstance(num_elements, numbers.Integral) or num_elements < 0:
        raise ValueError(f"num_elements must be a non-negative integer, got {num_elements!r}")
    return -(-int(num_elements) * dtype_bits(fmt) // 8)


def format_int(n) -> str:
    """``1048576 -> '1,048,576'``: an exact integer with thousands separators."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"format_int expects an integer, got {n!r}")
    return f"{int(n):,}"


def format_bytes(n, unit=None, precision=1) -> str:
    """A byte count in a readable unit.

    Parameters
    ----------
    n : int
        Bytes.
    unit : str, optional
        One of ``B, KiB, MiB, GiB, TiB`` (powers of 1,024) or ``KB, MB, GB, TB`` (powers of
        1,000). ``None`` picks the largest binary unit that keeps the number at least 1.
    precision : int
        Decimals, dropped when the value is a whole number: ``327680 -> '320 KiB'``.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Real) or not 0 <= n < float("inf"):
        raise ValueError(f"format_bytes expects a non-negative number of bytes, got {n!r}")
    if unit is None:
        unit = next(u for u, size in reversed(_BINARY.items()) if n >= size or u == "B")
    size = {**_BINARY, **_DECIMAL}.get(unit)
    if size is None:
        raise ValueError(f"unknown unit {unit!r}; use one of {list(_BINARY)} or {list(_DECIMAL)[1:]}")
    value = n / size
    text = f"{value:,.0f}" if value == int(value) else f"{value:,.{precision}f}"
    return f"{text} {unit}"


def format_percent(fraction, precision=1) -> str:
    """``0.8224 -> '82.2%'``."""
    return f"{100 * fraction:.{precision}f}%"


def format_difference(difference, bound=1e-12) -> str:
    """A difference expected to be floating-point rounding, printed the same on every machine.

    The size of a rounding error depends on which SIMD and BLAS kernels the CPU at hand runs
    (``8.9e-16`` on one machine, ``1.0e-15`` on the next), so a stored notebook output never prints
    it: ``format_difference(8.9e-16) == 'below 1e-12'``. A difference at or above ``bound`` is a
    real one and is printed with its size: ``format_difference(0.25) == '2.5e-01 (above 1e-12)'``.

    Parameters
    ----------
    difference : float
        A non-negative difference, such as ``np.abs(a - b).max()``.
    bound : float
        The largest difference that still counts as rounding.
    """
    if not isinstance(difference, numbers.Real) or not difference >= 0:
        raise ValueError(f"difference must be a non-negative number, got {difference!r}")
    if not isinstance(bound, numbers.Real) or not bound > 0:
        raise ValueError(f"bound must be a positive number, got {bound!r}")
    return f"below {bound:.0e}" if difference < bound else f"{difference:.1e} (above {bound:.0e})"
