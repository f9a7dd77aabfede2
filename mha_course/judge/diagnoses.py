"""The catalogue of diagnosed mistakes: one name, one detector and one message per classic slip.

Every question whose answer can show a slip's signature asks this catalogue, so the same slip gets
the same words in every assignment (07's blockwise attention and 08's rotary attention both say
"the scores were never scaled"). A message says what is wrong and where to look; it never hands
over the formula.

A question builds a *context*: per slip, the list of results that slip gives on its case
(``{"unscaled": [out]}``), and the sizes a detector needs (``{"h": 32, "h_kv": 8}``), then calls
:func:`check` with the names it can tell apart, in the order it wants them tried::

    diagnoses.check(got, expected, what, {"unscaled": [unscaled]}, "scale_missing", "scale_wrong")

Runs in the grading process (and the learner's own environment, for an inline judge); imports
numpy only. Book: chapter "Exercises".
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Diagnosis:
    """One classic slip: how to recognise it and what to tell the learner."""

    name: str  # key of the catalogue, also used by the tests ("bits_vs_bytes")
    detect: Callable  # detect(expected, got, context) -> bool: the answer shows this slip's signature
    message: str  # one line: what is wrong and where to look (never the formula)


class Diagnosed(AssertionError):
    """A failed check that shows a slip of the catalogue; ``name`` says which (raised by :func:`check`).

    Raised in the grading process only, never sent by a kernel: what a kernel raises reaches the judge
    as text (:class:`~mha_course.wire.LearnerError`), so the name is the judge's own finding.
    """

    def __init__(self, message, name):
        super().__init__(message)
        self.name = name


def matches(got, candidate):
    """Whether ``got`` equals ``candidate``: ints exactly, floats and arrays to 1e-6, containers item by item."""
    if candidate is None:
        return False
    if isinstance(candidate, (tuple, list)) and not isinstance(candidate, np.ndarray):
        return (type(got) is type(candidate) and len(got) == len(candidate)
                and all(matches(g, c) for g, c in zip(got, candidate)))
    if isinstance(candidate, np.ndarray):
        if type(got) is not np.ndarray or got.shape != candidate.shape:
            return False
        if candidate.dtype.kind in "biu":  # a mask or a count: exact, dtype included
            return got.dtype == candidate.dtype and bool(np.array_equal(got, candidate))
        if not np.all(np.isfinite(candidate)):
            return False
        return bool(np.all(np.isfinite(got)) and np.allclose(got, candidate, atol=1e-8, rtol=1e-6))
    if isinstance(got, bool) or not isinstance(got, (int, float, np.integer, np.floating)):
        return False
    if isinstance(candidate, (int, np.integer)) and isinstance(got, (int, np.integer)):
        return int(got) == int(candidate)
    try:
        got, candidate = float(got), float(candidate)
    except OverflowError:  # an int beyond every float: no slip of the catalogue gives it
        return False
    return bool(math.isfinite(got) and math.isclose(got, candidate, rel_tol=1e-9))


def _any(key):
    """A detector: ``got`` matches one of the results in the list ``context[key]``."""
    def detect(expected, got, context):
        return any(matches(got, candidate) for candidate in context.get(key, ()))
    return detect


def _scaled(factor):
    """A detector: ``got`` is ``expected`` times ``factor`` (numbers only)."""
    def detect(expected, got, context):
        return isinstance(expected, (int, float)) and matches(got, factor * expected)
    return detect


def _either(*detectors):
    return lambda expected, got, context: any(d(expected, got, context) for d in detectors)


def _heads(expected, got, context):
    h, h_kv = context.get("h"), context.get("h_kv")
    if not (h and h_kv and h != h_kv and isinstance(expected, int)) or isinstance(got, bool) or type(got) is not int:
        return False
    return got * h_kv == expected * h


def _non_finite(expected, got, context):
    """An array (or a tuple of arrays) with inf or NaN where every reference value is finite."""
    parts_got = got if type(got) is tuple else (got,)
    parts_ref = expected if type(expected) is tuple else (expected,)
    return (any(type(g) is np.ndarray and g.dtype.kind in "fc" and not np.all(np.isfinite(g)) for g in parts_got)
            and all(np.all(np.isfinite(np.asarray(r, dtype=float))) for r in parts_ref))


def _transposed(expected, got, context):
    if type(got) is not np.ndarray or not isinstance(expected, np.ndarray) or expected.ndim < 2:
        return False
    return matches(got, np.swapaxes(expected, -1, -2)) or _any("transposed")(expected, got, context)


_CATALOGUE = [
    Diagnosis("scale_missing", _any("unscaled"),
              "the scores were never scaled: look at the line that computes them"),
    Diagnosis("scale_wrong", _any("rescaled"),
              "the scores' scale is wrong: check what it is built from"),
    Diagnosis("bits_vs_bytes", _either(_scaled(8), _any("in_bits")),
              "a count in bits where bytes are asked: look at where bits become bytes"),
    Diagnosis("k_and_v", _any("k_or_v"),
              "off by a factor of 2 from K and V: check that each is counted, once"),
    Diagnosis("h_vs_h_kv", _either(_heads, _any("with_h")),
              "counted with the query heads (h): K and V have only the key-value heads (h_kv)"),
    Diagnosis("transposed", _transposed,
              "the right numbers in the wrong layout: check the order of the axes"),
    Diagnosis("head_layout", _any("mixed_heads"),
              "heads cut or glued with a plain reshape mix tokens into heads: move the head axis"),
    Diagnosis("mask_off_by_one", _any("off_by_one"),
              "the mask is one position off: check whether a token may see itself"),
    Diagnosis("rounding", _any("floor"),
              "rounded down: a partly used byte or block still counts whole; look at the division"),
    Diagnosis("positions_ignored", _any("from_zero"),
              "rotated as if at positions 0..n-1: the positions passed in are ignored"),
    Diagnosis("no_max_shift", _either(_any("unshifted"), _non_finite),
              "exp was taken before the row maximum was subtracted: large scores overflow"),
    Diagnosis("ragged_last_block", _any("whole_blocks"),
              "the last, shorter block was left out: check where the loop over blocks stops"),
    Diagnosis("not_rotated", _any("unrotated"),
              "a query or a key was not rotated: each takes its own position's angle"),
    Diagnosis("blocks_vs_slots", _any("in_blocks"),
              "that counts blocks, not token slots: a block holds block_size slots"),
    Diagnosis("wrong_kv_head", _any("other_kv_head"),
              "a query head reads the wrong key-value head: check which query heads share one"),
]

#: ``{name: Diagnosis}``, the whole catalogue.
CATALOGUE = {d.name: d for d in _CATALOGUE}


def diagnose(got, expected, context, *names):
    """The first of ``names`` whose signature ``got`` shows (``None`` when ``got`` is right or none fits)."""
    if matches(got, expected):
        return None
    for name in names:
        diagnosis = CATALOGUE[name]
        with np.errstate(all="ignore"):
            if diagnosis.detect(expected, got, context):
                return diagnosis
    return None


def known(got, expected, what, slips):
    """Raise ``AssertionError("<what>: <message>")`` when ``got`` is exactly one of a question's own slips.

    ``slips`` lists ``(result, message)`` pairs of the slips only this question can make; checked
    before the catalogue when such a result could also look like a catalogue slip (a ratio of 4 is
    both "4x the tokens" and "h / h_kv = 4" for Mistral 7B).
    """
    for value, message in slips:
        if not matches(got, expected) and matches(got, value):
            raise AssertionError(f"{what}: {message}")


def check(got, expected, what, context, *names):
    """Raise :class:`Diagnosed` (``"<what>: <message>"``) when ``got`` shows one of the slips ``names``."""
    diagnosis = diagnose(got, expected, context, *names)
    if diagnosis is not None:
        raise Diagnosed(f"{what}: {diagnosis.message}", diagnosis.name)
