"""The registry of the judge's questions, keyed by question id, and what their definitions share.

Each :class:`Question` knows how to judge one result for one case: ``check(got, *case)`` raises
``AssertionError`` with a one-line message (the :mod:`mha_course.judge.expect` helpers), computing the
reference with ``mha_kit``. The inputs a case stands for (random arrays from a seed, a config
from a preset name) are rebuilt exactly as the test cell's ``_call`` builds them in the kernel.

The questions themselves live with their assignment: ``solutions/<assignment>/grading_questions.py``
registers its question ids with :func:`question`; :func:`course_questions` loads the file of every
assignment of the course manifest (:data:`mha_course.course.COURSE`) once, and returns them all.

Runs in the grading process only: neither this module nor the assignments' files are part of the
grading kernel's graded kit, and nbgrader leaves ``grading_*.py`` out of the release and out
of the folder the kernel runs in (``CourseDirectory.ignore`` in ``nbgrader_config.py``). Question
ids are what the test cells pass to ``run``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..course import ASSIGNMENTS, assignment_module

#: ``{question id: Question}``: filled by the assignments' ``grading_questions.py`` (:func:`course_questions`).
QUESTIONS: dict = {}

#: Hint of a result 8 times too large: a count in bits.
BITS_HINT = {8: "bits, not bytes: divide by 8"}
#: Message of a byte count rounded down.
ROUND_UP = "round up to a whole byte: a partly used byte is still stored"


@dataclass(frozen=True)
class Question:
    """How to judge the results of one question id."""

    check: Callable  # check(got, *case): raises AssertionError with a one-line reason
    describe: Callable  # describe(*case) -> str, names the case in messages
    static: Optional[Callable] = None  # static({answer grade_id: source}) -> reason or None


def question(qid, describe, static=None):
    """Register the decorated ``check(got, *case)`` as question ``qid``."""
    def register(check):
        if qid in QUESTIONS:
            raise ValueError(f"question id {qid!r} registered twice")
        QUESTIONS[qid] = Question(check, describe, static)
        return check
    return register


def spec_name(spec):
    """How messages name a case's config: the preset's name, or its fields in the book's letters, so the
    case can be rebuilt: ``{"d_model": 6, "num_heads": 2, "num_layers": 5}`` is "a config (d=6, h=2, L=5)"."""
    if type(spec) is str:
        return spec
    return "a config (" + ", ".join(f"{_LETTERS.get(key, key)}={value!r}" for key, value in dict(spec).items()) + ")"


#: The book's letters (README, Notation) for an ``AttentionConfig``'s fields in messages; L: layers.
_LETTERS = {"d_model": "d", "num_heads": "h", "num_kv_heads": "h_kv", "head_dim": "d_h", "num_layers": "L",
            "kv_lora_rank": "d_c"}


def rng_arrays(seed, *shapes):
    """Standard normal arrays of ``shapes``, drawn in order from one generator seeded with ``seed``."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def ramp(*shape):
    """``np.arange`` in ``shape``, floats: distinct entries, so any mix-up shows."""
    return np.arange(np.prod(shape), dtype=float).reshape(shape)


def expect_tuple(got, size, what):
    """Raise ``AssertionError`` unless ``got`` is a tuple of ``size`` items (arrays, by the message)."""
    if type(got) is not tuple or len(got) != size:
        raise AssertionError(f"expected {what} as a tuple of {size} arrays, got {type(got).__name__}")


def course_questions():
    """Every question of the course: ``{question id: Question}``, each assignment's file loaded once."""
    for assignment in ASSIGNMENTS:
        assignment_module(assignment, "grading_questions")  # registers its questions when first loaded
    return QUESTIONS
