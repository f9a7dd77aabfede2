"""Assertion helpers of the judge (:mod:`mha_course.judge.questions`), run in the grading process.

The exercises' test cells no longer call them in the kernel: the judge calls them on the results a
test cell sent, outside it. Each helper raises ``AssertionError`` with a one-line message that names the quantity and says
*what* is wrong: the type, the shape, or by how much the number is off, with a hint for the
classic mistakes (``2x too large: did you count K and V twice?``).

>>> expect_int(327680, 327680, "cache bytes per token")
>>> expect_int(327680.0, 327680, "cache bytes per token")
Traceback (most recent call last):
...
AssertionError: expected cache bytes per token as an int, got float (327680.0): use // or int(...)
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np


def _fail(message):
    raise AssertionError(message)


def _ratio_text(got, expected):
    """``'2x too large'`` or ``'8x too small'`` when ``got / expected`` is a simple ratio."""
    if expected == 0 or got == 0:
        return None
    ratio = Fraction(got, expected)
    if ratio.denominator == 1:
        return f"{ratio.numerator}x too large"
    if ratio.numerator == 1:
        return f"{ratio.denominator}x too small"
    return None


def count_value(got):
    """``got`` as a Python ``int`` when it is a count: an ``int`` or a numpy integer, never a bool; else ``None``.

    numpy integers are counts too (the exercises say "return plain Python and numpy values"); whether one
    overflowed is :func:`overflow_message`'s question.
    """
    if type(got) is int:
        return got
    if isinstance(got, np.integer) and type(got).__module__ == "numpy":
        return int(got)
    return None


def overflow_message(got, expected, what):
    """The one-line verdict on a numpy integer that overflowed on its way to ``expected``, else ``None``.

    It overflowed when ``expected`` does not fit its dtype, or when it differs from ``expected`` by a
    multiple of ``2**bits`` (a product that wrapped around).
    """
    if not isinstance(got, np.integer) or not isinstance(expected, numbers.Integral):
        return None
    info, value = np.iinfo(got.dtype), int(got)
    if info.min <= expected <= info.max and (value == expected or (value - expected) % 2**info.bits):
        return None
    return (f"{what}: expected {expected:,}, got {value:,}: the count overflowed numpy's {got.dtype} (at most "
            f"{info.max:,}): count with Python ints")


def expect_int(got, expected, what, hints=None, wrong=None):
    """Check that ``got`` is a plain ``int`` equal to ``expected``.

    Parameters
    ----------
    got : object
        The learner's answer.
    expected : int
        The reference (from ``mha_kit``).
    what : str
        Name of the quantity, used in the message ("cache bytes per token").
    hints : dict, optional
        ``{ratio: hint}`` for classic mistakes, ``ratio = got / expected`` as an int (too large)
        or a ``Fraction`` / float below one (too small): ``{2: "did you count K and V twice?"}``.
    wrong : dict, optional
        ``{value: hint}``: exact results of classic mistakes, checked before the ratios
        (``{mha_count: "GQA counted as MHA: K and V have h_kv heads"}``).
    """
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        if isinstance(got, float):
            _fail(f"expected {what} as an int, got float ({got!r}): use // or int(...)")
        _fail(f"expected {what} as an int, got {type(got).__module__}.{type(got).__name__} ({got!r})"
              + (": wrap it in int(...)" if isinstance(got, numbers.Integral) else ""))
    if overflow_message(got, expected, what):
        _fail(overflow_message(got, expected, what))
    if count_value(got) is None:
        _fail(f"expected {what} as a plain Python int, got {type(got).__module__}.{type(got).__name__}: "
              "wrap it in int(...)")
    got = count_value(got)
    if got == expected:
        return
    message = f"{what}: expected {expected:,}, got {got:,}"
    if wrong and got in wrong:
        _fail(f"{message}: {wrong[got]}")
    ratio = _ratio_text(got, expected)
    if ratio:
        message += f" ({ratio}"
        hint = _lookup_hint(hints, Fraction(got, expected))
        message += f": {hint})" if hint else ")"
    _fail(message)


def _lookup_hint(hints, ratio):
    for key, hint in (hints or {}).items():
        if Fraction(key).limit_denominator(1000) == ratio:
            return hint
    return None


def expect_float(got, expected, what, hints=None, rtol=1e-9, wrong=None):
    """Check a real-valued answer (a ratio, FLOPs per byte) with ``math.isclose``.

    ``hints`` maps ``got / expected`` (a number such as ``0.5``) to an explanation. ``wrong`` lists
    ``(value, hint)`` pairs: results of classic mistakes, named (the first that ``got`` is close to)
    before the ratios; a value close to ``expected`` itself is skipped.
    """
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        _fail(f"expected {what} as a number, got {type(got).__name__} ({got!r})")
    try:
        got = float(got)
    except OverflowError:  # an int past 1.8e308: no float holds it, and no answer is that large
        _fail(f"{what}: expected {expected:.6g}, got an int of {int(got).bit_length()} bits, too large for a float")
    if math.isclose(got, expected, rel_tol=rtol):
        return
    message = f"{what}: expected {_differing(expected, got)}"
    for value, hint in wrong or ():
        if not math.isclose(value, expected, rel_tol=rtol) and math.isclose(got, value, rel_tol=rtol):
            _fail(f"{message}: {hint}")
    if _float32_sized(got, expected):
        _fail(f"{message} (a relative gap of {abs(got - expected) / abs(expected):.1g}, float32's precision: "
              "compute in float64, numpy's default)")
    for ratio, hint in (hints or {}).items():
        if math.isclose(got, ratio * expected, rel_tol=rtol):
            message += f" ({hint})"
            break
    _fail(message)


def _differing(expected, got):
    """``"X, got Y"`` with 6 significant digits, or as many more as it takes for X and Y to differ."""
    for digits in range(6, 18):
        text = f"{expected:.{digits}g}", f"{got:.{digits}g}"
        if text[0] != text[1]:
            return f"{text[0]}, got {text[1]}"
    return f"{expected!r}, got {got!r}"


def _float32_sized(got, expected):
    """Whether ``got`` is off ``expected`` by no more than float32's precision (2**-23, relative), not less than 1e-12."""
    gap = abs(got - expected)
    return expected != 0 and 1e-12 * abs(expected) < gap <= 2.0**-23 * abs(expected)


def merge_slips(slips, close=None):
    """``[(value, hint)]`` of classic mistakes, with slips that give the same value on a case merged into one.

    Two slips that give the same value cannot be told apart by it, so neither alone is named: the merged
    entry names both (``"hint A; or: hint B"``), each hint once. ``close(a, b)`` says when two values are the
    same (default ``==``); the order of first appearance is kept.
    """
    close = close or (lambda a, b: a == b)
    merged = []
    for value, hint in slips:
        same = next((i for i, (other, _) in enumerate(merged) if close(value, other)), None)
        if same is None:
            merged.append((value, [hint]))
        elif hint not in merged[same][1]:
            merged[same][1].append(hint)
    return [(value, "; or: ".join(hints)) for value, hints in merged]


def expect_shape(got, expected, what):
    """Check that ``got`` is a tuple of ints equal to ``expected`` (say when axes are swapped)."""
    if not isinstance(got, tuple):
        _fail(f"expected the shape of {what} as a tuple, got {type(got).__name__} ({got!r})")
    if any(isinstance(a, bool) or not isinstance(a, numbers.Integral) for a in got):
        _fail(f"shape of {what} must hold ints, got {got!r}")
    got = tuple(int(a) for a in got)
    if got == tuple(expected):
        return
    if len(got) != len(expected):
        _fail(f"shape of {what}: expected {len(expected)} axes {tuple(expected)}, got {len(got)} axes {got}")
    if sorted(got) == sorted(expected):
        _fail(f"shape of {what}: expected {tuple(expected)}, got {got}: the right sizes in the wrong order")
    _fail(f"shape of {what}: expected {tuple(expected)}, got {got}")


def expect_close(got, expected, what, wrong=None, atol=1e-8, rtol=1e-6,
                 nonfinite="did exp() overflow, or is a row fully masked?"):
    """Check an array against a reference with ``np.allclose``.

    Parameters
    ----------
    got : array_like
    expected : ndarray
    what : str
    wrong : dict, optional
        ``{hint: array}``: results of classic mistakes. If ``got`` matches one of them the
        message gives that hint ("looks like the mask was applied after softmax").
    nonfinite : str, optional
        What to ask when ``got`` holds NaN or inf (the question's own likely cause).
    """
    if not isinstance(got, np.ndarray):
        _fail(f"expected {what} as a numpy array, got {type(got).__name__}")
    got = _plain(got)
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        _fail(f"shape of {what}: expected {expected.shape}, got {got.shape}")
    if not np.all(np.isfinite(got)):
        _fail(f"{what} contains NaN or inf: {nonfinite}")
    if np.allclose(got, expected, atol=atol, rtol=rtol):
        return
    for hint, array in (wrong or {}).items():
        if np.shape(array) == got.shape and np.allclose(got, array, atol=atol, rtol=rtol):
            _fail(f"{what} does not match the reference: {hint}")
    worst = float(np.max(np.abs(got - expected)))
    _fail(f"{what} does not match the reference (largest difference {worst:.3g})")


def _plain(array):
    """A plain ``ndarray`` copy: a subclass (a masked array, say) compares only part of itself."""
    return array if type(array) is np.ndarray else np.array(array, copy=True, subok=False)


def expect_equal(got, expected, what):
    """Check a small exact answer (a set, a bool array, a string) with a one-line message."""
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray):
            _fail(f"expected {what} as a numpy array, got {type(got).__name__}")
        got = _plain(got)
        if got.dtype != expected.dtype:
            _fail(f"expected {what} of dtype {expected.dtype}, got {got.dtype}")
        if got.shape != expected.shape:
            _fail(f"shape of {what}: expected {expected.shape}, got {got.shape}")
        if not np.array_equal(got, expected):
            _fail(f"{what}: {int(np.sum(got != expected))} of {got.size} entries are wrong")
        return
    if type(got) is not type(expected):
        _fail(f"expected {what} as a {type(expected).__name__}, got {type(got).__name__} ({got!r})")
    if got != expected:
        _fail(f"{what}: expected {expected!r}, got {got!r}")
