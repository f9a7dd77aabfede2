"""Flags in nbgrader's gradebook: :class:`RecordFlags`, the last step of every autograde.

``nbgrader_config.py`` puts it last in ``Autograde.autograde_preprocessors``: a submission with a flag
of severity ``review`` (the rebuild, the sandbox and the intake record them in the notebook's
metadata, :func:`mha_course.notebook.add_flags`) is marked *flagged*, its grades *needs manual grade*,
and the reasons go into the auto comment of its first answer cell, so formgrader shows them.
``nbgrader autograde``, formgrader's Autograde button and safegrade all end with it; safegrade's
course writer (:mod:`mha_course.grade.records`) marks the instructor's gradebook with :func:`mark_flags`.
"""
from __future__ import annotations

from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

from ..notebook import add_flags, flags_of, one_line
from .execute import RUN_KEY


class RecordFlags(NbGraderPreprocessor):
    """After ``SaveAutoGrades``: write the notebook's flags into the gradebook."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        add_flags(nb, resources.get(RUN_KEY, {}).get("flags", []))  # those of error carried forward's re-run
        with Gradebook(info["db_url"]) as gradebook:
            mark_flags(gradebook, info["assignment"], info["notebook"], info["student"], flags_of(nb))
        return nb, resources


def mark_flags(gradebook, assignment, notebook, student, flags):
    """Mark one submitted notebook flagged (needs manual grade, reasons in a comment) when ``flags`` ask for review."""
    review = [text for severity, text in flags if severity == "review"]
    submitted = gradebook.find_submission_notebook(notebook, assignment, student)
    submitted.flagged = bool(review)
    if review:
        for grade in submitted.grades:
            grade.needs_manual_grade = True
        comments = sorted(submitted.comments, key=lambda c: c.cell.name)
        first = next((c for c in comments if c.cell.name == _first_answer(gradebook, notebook, assignment)), None)
        if first or comments:
            (first or comments[0]).auto_comment = "Flagged for review: " + " | ".join(one_line(t) for t in review)
    gradebook.db.commit()


def _first_answer(gradebook, notebook, assignment):
    cells = gradebook.find_notebook(notebook, assignment).solution_cells
    return min(cells, key=lambda c: c.id).name if cells else None
