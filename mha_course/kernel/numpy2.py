"""Names numpy 1.x had and numpy 2 removed: the browser edition runs numpy 1.25, grading numpy 2.

An answer written in the browser edition may use ``np.float_``, ``-np.Inf`` or ``np.asfarray``: they
work there without a word, and are gone from the numpy 2.x that the grading kernel and a desktop
install run. So that such an answer is graded as written, the grading kernel puts them back
(:func:`install`, called by :mod:`mha_course.plugins.sandbox` before the kernel starts): each use
warns, and a test cell shows that warning as a note, which costs nothing. ``python -m
mha_course.check`` and the browser edition's page warn in one line naming the replacement
(:func:`uses`, :func:`message`).

Kernel side (:mod:`mha_course.kernel`): numpy and the standard library only.
"""
from __future__ import annotations

import ast
import warnings

#: ``{name removed in numpy 2: its replacement}`` (numpy's ``_expired_attrs_2_0``, and the 2.x removals after it).
REMOVED = {
    "float_": "np.float64", "complex_": "np.complex128", "cfloat": "np.complex128", "longfloat": "np.longdouble",
    "singlecomplex": "np.complex64", "longcomplex": "np.clongdouble", "clongfloat": "np.clongdouble",
    "string_": "np.bytes_", "unicode_": "np.str_", "Inf": "np.inf", "Infinity": "np.inf", "PINF": "np.inf",
    "infty": "np.inf", "NINF": "-np.inf", "NaN": "np.nan", "NZERO": "-0.0", "PZERO": "0.0",
    "asfarray": "np.asarray(x, dtype=np.float64)", "round_": "np.round", "alltrue": "np.all", "sometrue": "np.any",
    "product": "np.prod", "cumproduct": "np.cumprod", "in1d": "np.isin(a, b).ravel()", "trapz": "np.trapezoid",
    "issubclass_": "issubclass", "mat": "np.asmatrix", "find_common_type": "np.result_type",
}
#: The module names an answer reaches numpy by.
NUMPY_NAMES = ("np", "numpy")


def message(name):
    """The one line that names the replacement of ``np.<name>``."""
    return (f"np.{name} was removed in numpy 2, which grades this course (the browser edition runs numpy 1.25): "
            f"use {REMOVED[name]}")


def uses(source):
    """The names of :data:`REMOVED` that ``source`` reads as ``np.NAME`` or ``numpy.NAME``, or imports, in order."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NUMPY_NAMES:
            found.append(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module == "numpy":
            found += [alias.name for alias in node.names]
    return [name for name in dict.fromkeys(found) if name in REMOVED]


def _aliases(np):
    """``{removed name: what numpy 1.25 gave}``, built from today's numpy."""
    def asfarray(a, dtype=np.float64):
        dtype = dtype if np.issubdtype(dtype, np.inexact) else np.float64
        return np.asarray(a, dtype=dtype)

    def in1d(ar1, ar2, assume_unique=False, invert=False, **kwargs):
        return np.isin(ar1, ar2, assume_unique=assume_unique, invert=invert, **kwargs).ravel()

    values = {"float_": np.float64, "complex_": np.complex128, "cfloat": np.complex128, "longfloat": np.longdouble,
              "singlecomplex": np.complex64, "longcomplex": np.clongdouble, "clongfloat": np.clongdouble,
              "string_": np.bytes_, "unicode_": np.str_, "Inf": np.inf, "Infinity": np.inf, "PINF": np.inf,
              "infty": np.inf, "NINF": -np.inf, "NaN": np.nan, "NZERO": -0.0, "PZERO": 0.0, "asfarray": asfarray,
              "round_": np.round, "alltrue": np.all, "sometrue": np.any, "product": np.prod,
              "cumproduct": np.cumprod, "in1d": in1d, "issubclass_": issubclass}
    for name, new in (("trapz", "trapezoid"), ("mat", "asmatrix"), ("find_common_type", "result_type")):
        if hasattr(np, new):
            values[name] = getattr(np, new)
    return values


def install():
    """Put the removed names back into numpy (a grading kernel): each use warns with :func:`message`."""
    import numpy as np

    if getattr(np, "_mha_numpy1_names", False) or int(np.__version__.split(".")[0]) < 2:
        return
    values, original = _aliases(np), getattr(np, "__getattr__", None)

    def __getattr__(name):
        if name in values:
            warnings.warn(message(name), DeprecationWarning, stacklevel=2)
            return values[name]
        if original is None:
            raise AttributeError(f"module 'numpy' has no attribute {name!r}")
        return original(name)

    np.__getattr__ = __getattr__
    np._mha_numpy1_names = True
