"""The README's grading benchmark runs: a tiny class through plain nbgrader and safegrade (issue 37).

A benchmark nothing runs breaks silently (``KeyError: 'endless_loop'``, a hostile kind the test
support no longer had). This grades a tiny class with both graders and
reads what the script prints; the timings themselves are not asserted. A class of 4 (three honest, one
hostile) takes both graders through the same steps as 10 did, for 12 fewer gradings.
"""
from __future__ import annotations

import pytest

from benchmarks import grading_benchmark

pytestmark = pytest.mark.filterwarnings("ignore")


def test_every_hostile_kind_the_benchmark_names_exists():
    from safegrade_support import hostile

    assert set(grading_benchmark.HOSTILE) <= set(hostile())


def test_the_benchmark_grades_a_tiny_class_and_both_graders_agree(capsys):
    assert grading_benchmark.main(["--students", "4", "--workers", "2", "--timeout", "3"]) == 0
    out = capsys.readouterr().out
    assert "class: 4 submissions (3 honest)" in out and "honest grades identical: True" in out
    assert "nbgrader autograde:" in out and "mha_course.safegrade:" in out
