"""``JudgeCells``: the judge as an nbgrader preprocessor, run right after ``Execute`` in autograde.

``nbgrader_config.py`` puts it into ``c.Autograde.autograde_preprocessors``, so ``nbgrader
autograde``, formgrader's Autograde button and ``python -m mha_course.safegrade`` all score the
judge's verdicts through nbgrader's own ``SaveAutoGrades``.
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor

from .core import judge_notebook


class JudgeCells(NbGraderPreprocessor):
    """Compare the results every graded test cell sent with the reference; fail the cells that differ."""

    def preprocess(self, nb, resources):
        assignment = resources.get("nbgrader", {}).get("assignment")
        judge_notebook(nb, assignment)
        return nb, resources


class CarryForward(NbGraderPreprocessor):
    """Error carried forward (:mod:`mha_course.judge.carry`), right after :class:`JudgeCells`.

    A dependent answer whose test cells failed with a failed earlier answer is graded again on a copy
    of the notebook whose failed earlier answers carry the solution's source (read from the
    course's ``source_directory``), run by the same sandboxed executor and judged by the same judge.
    """

    def preprocess(self, nb, resources):
        from mha_course.course import COURSE

        from .carry import carry_forward, plan, substituted_copy, unanswered

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
        judge_notebook(twin, assignment)
        carried = carry_forward(nb, twin, substituted, regrade, builds_on)
        self.log.info("carried forward in %s: %d test cell(s) with %s substituted", assignment, len(carried),
                      ", ".join(sorted(substituted)))
        return nb, resources

    def _solutions(self, info):
        """``{answer grade_id: source}`` of the course's source notebook (``solutions/``), read here."""
        from mha_course.trusted.structure import _coursedir

        from .carry import solution_sources

        coursedir = _coursedir(self)
        folder = Path(coursedir.format_path(coursedir.source_directory, ".", info.get("assignment")))
        path = folder / f"{info.get('notebook', info.get('assignment'))}.ipynb"
        return solution_sources(path) if path.is_file() else {}

    def _executor(self):
        """The course's executor (``SandboxedExecute``: learner edition, limits), configured as the primary one."""
        from mha_course.trusted.execute import SandboxedExecute

        return SandboxedExecute(parent=self.parent, config=self.config)
