"""Dependency hints: which earlier answers a question builds on fail their own tests, said at once.

A question that calls the learner's own earlier answers (``builds_on`` in the course manifest,
:data:`mha_course.course.COURSE`) fails with them. Judged at once in the learner's own kernel (a test
cell run by hand, Validate, ``python -m mha_course.check``, the browser edition), the reason names those
earlier answers (:func:`dependency_hint`) or the blank one that raised (:func:`blank_dependency`). The
test cells of each answer are read from the released notebooks, which the learner has: never a solution.
When graded, the error is carried forward instead (:mod:`mha_course.plugins.carry`).
"""
from __future__ import annotations

import functools
import json
from types import SimpleNamespace

from ..course import COURSE, REPO_ROOT
from ..notebook import parse_runs, test_cells


def name_of(answer):
    """``"rope"`` of the answer cell ``rope_answer``."""
    return answer.removesuffix("_answer")


def _released(path):
    """A released notebook read as plain JSON, its sources as text."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return SimpleNamespace(cells=[dict(c, source="".join(c["source"]) if isinstance(c["source"], list) else c["source"])
                                  for c in cells])


@functools.lru_cache(maxsize=None)
def _dependent_questions():
    """``{question id: (answers it builds on)}`` for the test cells of every dependent answer of the course.

    Read from the released notebooks, which the learner has: the inline judge never opens a solution.
    """
    result = {}
    for assignment, spec in COURSE.items():
        path = REPO_ROOT / "exercises" / assignment / f"{assignment}.ipynb"  # the release: test cells, no answers
        if not spec.builds_on or not path.is_file():
            continue
        nb = _released(path)
        for dependent, indices in test_cells(nb).items():
            for index in indices if dependent in spec.builds_on else ():
                for question, _ in parse_runs(nb.cells[index]["source"]):
                    result[question] = spec.builds_on[dependent]
    return result


def listed(names):
    """``"a, b and c"``."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@functools.lru_cache(maxsize=None)
def _answer_questions():
    """``{answer grade_id: (question ids of its own test cells)}`` over the course, from the releases."""
    result = {}
    for assignment in COURSE:
        path = REPO_ROOT / "exercises" / assignment / f"{assignment}.ipynb"
        if not path.is_file():
            continue
        nb = _released(path)
        for answer, indices in test_cells(nb).items():
            result[answer] = tuple(q for i in indices for q, _ in parse_runs(nb.cells[i]["source"]))
    return result


def dependency_hint(question, failing=frozenset()):
    """For a question that calls earlier answers, words that name those of them that fail; else ``None``.

    ``failing`` holds the question ids whose test failed when last run in this kernel: an earlier
    answer is named only when one of its own questions is there, so a dependency that passes is never
    blamed. Shown by the inline judge (a test cell run by hand, Validate, ``mha_course.check``), after
    the answer's own fault; when graded, an error is carried forward instead (:func:`carry_forward`).
    """
    owned = _answer_questions()
    used = [name_of(a) for a in _dependent_questions().get(question, ()) if set(owned.get(a, ())) & set(failing)]
    return fix_first(used) if used else None


def fix_first(names):
    """``"your rope fails its own test: fix it first"``, for the earlier answers ``names``."""
    if len(names) == 1:
        return f"your {names[0]} fails its own test: fix it first"
    return f"your {listed(names)} fail their own tests: fix them first"


def blank_dependency(question, error):
    """The name of the earlier answer whose blank stub raised ``error`` in ``question``'s test, or ``None``."""
    used = {name_of(a) for a in _dependent_questions().get(question, ())}
    tb = getattr(error, "__traceback__", None)
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    name = tb.tb_frame.f_code.co_name if tb is not None else None
    return name if name in used else None
