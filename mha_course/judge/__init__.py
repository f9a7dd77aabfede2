"""The judge: a test cell sends the learner's results as plain data, the grading process judges them.

* :mod:`mha_course.judge.cases` - kernel side: ``run(question, call, *cases)`` and the encoding
  (imports nothing that holds a reference answer; the grading kernel's learner edition has it).
* :mod:`mha_course.judge.core` - grading side: :func:`judge_notebook`, the decoding, the parse of
  the trusted cases.
* :mod:`mha_course.judge.questions` - the registry of the questions, which each assignment's
  ``solutions/<assignment>/grading_questions.py`` fills (the reference and the diagnostic messages).
* :class:`JudgeCells` - the nbgrader preprocessor (``nbgrader_config.py``), after ``Execute``.
* :mod:`mha_course.judge.carry` and :class:`CarryForward` - error carried forward, after ``JudgeCells``:
  a question that builds on a failed earlier answer is graded again with the solution's answer there.

``JudgeCells`` and ``judge_notebook`` load on first use, so that a kernel importing
``mha_course.judge.cases`` pays for neither nbgrader nor the references.
"""
from __future__ import annotations

__all__ = ["CarryForward", "JudgeCells", "judge_notebook"]


def __getattr__(name):
    if name in ("JudgeCells", "CarryForward"):
        from . import preprocessor

        return getattr(preprocessor, name)
    if name == "judge_notebook":
        from .core import judge_notebook

        return judge_notebook
    raise AttributeError(f"module 'mha_course.judge' has no attribute {name!r}")
