"""The instructor's pipeline with nbgrader's command line: release, collect, autograde, feedback, export.

One student answers everything (15 points); the other fixes the GQA bug with ``i // h_kv``, which
passes the visible test and fails a hidden one (13 points). The feedback must show the score and
the one-line reason, and nothing of the hidden tests' code.
"""
import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import grading_support as gs
from mha_course.judge.diagnoses import CATALOGUE

ASSIGNMENT = "06_spot_the_bug"


def nbgrader(*args, cwd):
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    shutil.copy(gs.ROOT / "nbgrader_config.py", root)
    shutil.copytree(gs.ROOT / "solutions" / ASSIGNMENT, root / "solutions" / ASSIGNMENT)
    nbgrader("generate_assignment", ASSIGNMENT, cwd=root)
    (wrong,) = [w for w in gs.WRONG_ANSWERS[ASSIGNMENT] if w[0] == "kv_head_i_div_h_kv"]
    for student, nb in (("alice", gs.submission(ASSIGNMENT, {})),
                        ("bob", gs.submission(ASSIGNMENT, {wrong[1]: (wrong[2], wrong[3])}))):
        target = root / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        nbformat.write(nb, target / f"{ASSIGNMENT}.ipynb")
    nbgrader("autograde", ASSIGNMENT, cwd=root)
    nbgrader("generate_feedback", ASSIGNMENT, cwd=root)
    nbgrader("export", "--to", "grades.csv", cwd=root)
    return root


def test_release_matches_the_committed_exercises(course):
    released = nbformat.read(course / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    assert released == gs.read("exercises", ASSIGNMENT)


def test_exported_csv_holds_the_scores(course):
    with open(course / "grades.csv", newline="") as f:
        rows = {row["student_id"]: row for row in csv.DictReader(f)}
    assert {s: (float(r["score"]), float(r["max_score"])) for s, r in rows.items()} == {
        "alice": (15.0, 15.0), "bob": (13.0, 15.0)}
    assert all(r["assignment"] == ASSIGNMENT for r in rows.values())


def test_feedback_gives_the_reason_without_hidden_tests(course):
    html = (course / "feedback" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    # i // h_kv picks the wrong key-value head when g != h_kv: the visible case h=6, h_kv=3 names the slip
    assert CATALOGUE["wrong_kv_head"].message in html
    source = gs.read("solutions", ASSIGNMENT)
    hidden = [line.strip() for cell in source.cells if "BEGIN HIDDEN TESTS" in cell.source
              for line in cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0].splitlines()
              if line.strip() and not line.strip().startswith("#")]
    assert hidden
    leaked = [line for line in hidden if line in html or line.replace('"', "&quot;") in html]
    assert not leaked, f"hidden test code in the feedback: {leaked}"
    assert "HIDDEN TESTS" not in html
