"""``JudgeCells``: the judge as an nbgrader preprocessor, run right after ``Execute`` in autograde.

``nbgrader_config.py`` puts it into ``c.Autograde.autograde_preprocessors``, so ``nbgrader
autograde``, formgrader's Autograde button and ``python -m mha_course.safegrade`` all score the
judge's verdicts through nbgrader's own ``SaveAutoGrades``.
"""
from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

from .core import judge_notebook


class JudgeCells(NbGraderPreprocessor):
    """Compare the results every graded test cell sent with the reference; fail the cells that differ."""

    def preprocess(self, nb, resources):
        assignment = resources.get("nbgrader", {}).get("assignment")
        judge_notebook(nb, assignment)
        return nb, resources
