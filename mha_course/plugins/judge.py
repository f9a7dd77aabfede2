"""The judge as nbgrader preprocessors, run right after the executor in autograde.

``nbgrader_config.py`` puts :class:`JudgeCells` and :class:`CarryForward` into
``c.Autograde.autograde_preprocessors``, so ``nbgrader autograde``, formgrader's Autograde button
and ``python -m mha_course.safegrade`` all score the judge's verdicts through nbgrader's own
``SaveAutoGrades``.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets.utils.importstring import import_item

from ..course import COURSE
from ..judge.core import judge_notebook
from ..notebook import answers
from .api import converter_of
from .carry import carry_forward, plan, substituted_copy, unanswered


class JudgeCells(NbGraderPreprocessor):
    """Compare the results every graded test cell sent with the reference; fail the cells that differ."""

    def preprocess(self, nb, resources):
        judge_notebook(nb)
        return nb, resources


class CarryForward(NbGraderPreprocessor):
    """Error carried forward (:mod:`mha_course.plugins.carry`), right after :class:`JudgeCells`.

    A dependent answer whose test cells failed with a failed earlier answer is graded again on a copy
    of the notebook whose failed earlier answers carry the solution's source (read from the
    course's ``source_directory``), run by the executor of this autograde (the course's
    ``SandboxedExecute``, with its settings) and judged by the same judge.
    """

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        assignment = info.get("assignment")
        builds_on = COURSE[assignment].builds_on if assignment in COURSE else {}
        substituted, regrade = plan(nb, builds_on, unanswered(nb)) if builds_on else (set(), {})
        if not substituted:
            return nb, resources
        solutions = self._solutions(info)
        if not substituted <= set(solutions):
            self.log.warning("no error carried forward in %s: no solution of %s in the course's source", assignment,
                             ", ".join(sorted(substituted - set(solutions))))
            return nb, resources
        twin = substituted_copy(nb, substituted, solutions)
        twin, _ = self._executor().preprocess(twin, {**resources, "nbgrader": dict(info)})
        judge_notebook(twin)
        carried = carry_forward(nb, twin, substituted, regrade, builds_on)
        self.log.info("carried forward in %s: %d test cell(s) with %s substituted", assignment, len(carried),
                      ", ".join(sorted(substituted)))
        return nb, resources

    def _solutions(self, info):
        """``{answer grade_id: source}`` of the course's source notebook (``solutions/``), read here."""
        coursedir = converter_of(self).coursedir
        folder = Path(coursedir.format_path(coursedir.source_directory, ".", info.get("assignment")))
        path = folder / f"{info.get('notebook', info.get('assignment'))}.ipynb"
        return answers(nbformat.read(path, as_version=4)) if path.is_file() else {}

    def _executor(self):
        """A new executor of the class this autograde runs (the course's ``SandboxedExecute``), same config."""
        for item in getattr(converter_of(self), "autograde_preprocessors", ()):
            kind = import_item(item) if isinstance(item, str) else item
            if isinstance(kind, type) and issubclass(kind, Execute):
                return kind(parent=self.parent, config=self.config)
        return Execute(parent=self.parent, config=self.config)
