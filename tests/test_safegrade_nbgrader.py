"""After safegrade, nbgrader sees what its own autograde would leave: formgrader's API, feedback, export.

A class of three (full marks, one question unanswered, test cells edited) is graded by safegrade
into a course; then formgrader's backend (``NbGraderAPI``, what its HTTP handlers call) must list
every student as autograded with the right score and flag, ``nbgrader generate_feedback`` and
``nbgrader export`` must work on the result, and formgrader's Autograde button on the cheater
(``NbGraderAPI.autograde``) must give the same verdict.
"""
from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys

import pytest

from grading_support import ROOT
from mha_course.plugins.api import course_api
from safegrade_support import A, honest, hostile, safegrade, write

pytestmark = pytest.mark.filterwarnings("ignore")

# student: (score, flagged)
EXPECTED = {"full": (6.0, False), "no_split": (4.0, False), "cheater": (0.0, True)}


def nbgrader(*args, cwd):
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions" / A, root / "solutions" / A)
    nbgrader("generate_assignment", "--force", A, cwd=root)  # the release, as the instructor's guide makes it
    students = {"full": honest()["honest_full"], "no_split": honest()["honest_no_split"],
                "cheater": hostile()["edit_tests"]}
    folder = write(students, root.parent / "lms_download")
    safegrade(folder, root.parent / "out", root, "--timeout", "8")
    return root


def _submissions(root):
    api = course_api(root)
    listed = {s["student"]: s for s in api.get_submissions(A)}
    notebooks = {s["student"]: s for s in api.get_notebook_submissions(A, A)}
    return listed, notebooks


def test_formgrader_lists_every_student_autograded_with_score_and_flag(course):
    listed, notebooks = _submissions(course)
    assert set(listed) == set(EXPECTED)
    for student, (score, flagged) in EXPECTED.items():
        assert listed[student]["autograded"] and listed[student]["submitted"], listed[student]
        assert (listed[student]["score"], listed[student]["needs_manual_grade"]) == (score, flagged), student
        assert notebooks[student]["flagged"] is flagged, notebooks[student]


def test_feedback_and_export_work_on_the_result(course):
    nbgrader("generate_feedback", A, cwd=course)
    for student in EXPECTED:
        page = (course / "feedback" / student / A / f"{A}.html").read_text()
        assert "HIDDEN TESTS" not in page, student
    unanswered = (course / "feedback" / "no_split" / A / f"{A}.html").read_text()
    assert "NotImplementedError" in unanswered and "Traceback (most recent call last)" not in unanswered  # the reason, in one line
    assert not re.search(r"(src|href)=\"https?://", unanswered)  # offline: nothing from the network
    nbgrader("export", "--to", "grades.csv", cwd=course)
    with open(course / "grades.csv", newline="") as f:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f) if row["assignment"] == A}
    assert rows == {student: score for student, (score, _) in EXPECTED.items()}


def test_formgraders_autograde_button_gives_the_same_verdict(course):
    before = _submissions(course)
    step = course_api(course).autograde(A, "cheater", force=True)
    assert step["success"], step.get("log", "")[-2000:]
    after = _submissions(course)
    for index in (0, 1):
        keys = ("score", "needs_manual_grade", "flagged")
        assert {k: after[index]["cheater"].get(k) for k in keys} == {k: before[index]["cheater"].get(k) for k in keys}
