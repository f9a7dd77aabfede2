"""The learner's commands: ``mha_course.check`` (visible tests) and ``mha_course.selfgrade`` (all tests)."""
import os
import subprocess
import sys

import nbformat
import pytest

import grading_support as gs

ASSIGNMENT = "01_shapes"  # the smallest notebook: the commands, not the exercises, are under test


def run(module, *args, cwd):
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def _with_a_test_switched_off(nb):
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_transformer_base":
            cell.source = cell.source.replace('run("head_dim", head_dim, (512, 8))', 'pass  # run("head_dim", head_dim, (512, 8))')
    return nb


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory):
    """The release, a complete answer, one with a float where an int belongs, one with a test cell edited."""
    folder = tmp_path_factory.mktemp("learner")
    wrong = gs.WRONG_ANSWERS[ASSIGNMENT][0]  # head_dim with / instead of //
    paths = {}
    for name, nb in (("release", gs.read("exercises", ASSIGNMENT)), ("complete", gs.submission(ASSIGNMENT, {})),
                     ("wrong", gs.submission(ASSIGNMENT, {wrong[1]: (wrong[2], wrong[3])})),
                     ("edited", _with_a_test_switched_off(gs.submission(ASSIGNMENT, {}))),
                     ("reference", gs.submission(ASSIGNMENT, {"split_heads_answer": (
                         "    B, n, d = x.shape\n", "    return mk.split_heads(x, num_heads)\n")}))):
        paths[name] = folder / name / f"{ASSIGNMENT}.ipynb"
        paths[name].parent.mkdir()
        nbformat.write(nb, paths[name])
    return paths


def test_check_fails_on_the_untouched_release(notebooks, tmp_path):
    proc = run("mha_course.check", notebooks["release"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count("not answered yet") == len(gs.points_of_tests(ASSIGNMENT))


def test_check_passes_a_complete_answer(notebooks, tmp_path):
    proc = run("mha_course.check", notebooks["complete"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all visible tests pass" in proc.stdout


def test_check_says_what_is_wrong_in_one_line(notebooks, tmp_path):
    proc = run("mha_course.check", notebooks["wrong"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "AssertionError: expected head size d_h (d=512, h=8) as an int, got float (64.0): use // or int(...)" in proc.stdout
    assert "Traceback" not in proc.stdout and "mha_course" not in proc.stdout  # the reason, not a traceback
    assert proc.stdout.count("FAIL:") == 1
    assert "1 failing test cell(s)" in proc.stdout


def test_check_notices_an_edited_test_cell(notebooks, tmp_path):
    proc = run("mha_course.check", notebooks["edited"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "EDITED TEST: Head size of the Transformer base" in proc.stdout
    assert "1 edited test cell(s)" in proc.stdout


def test_check_refuses_a_missing_notebook(tmp_path):
    proc = run("mha_course.check", tmp_path / "nope.ipynb", cwd=tmp_path)
    assert proc.returncode == 2


def test_selfgrade_full_marks_exit_zero(notebooks, tmp_path):
    proc = run("mha_course.selfgrade", notebooks["complete"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Total: 6 / 6" in proc.stdout


def test_selfgrade_scores_each_question(notebooks, tmp_path):
    proc = run("mha_course.selfgrade", notebooks["wrong"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "Q1 (head_dim): 0 / 1" in lines
    assert "Q3 (split_heads): 2 / 2" in lines
    assert "Total: 5 / 6" in lines
    assert "HIDDEN" not in proc.stdout  # the hidden tests' code is never shown


def test_selfgrade_needs_a_known_assignment(tmp_path):
    other = tmp_path / "notes.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), other)
    proc = run("mha_course.selfgrade", other, cwd=tmp_path)
    assert proc.returncode == 2
    assert "pass --assignment" in proc.stderr


def test_selfgrade_reads_the_assignment_of_a_copy(notebooks, tmp_path):
    copy = tmp_path / "01_shapes-Copy1.ipynb"
    copy.write_bytes(notebooks["complete"].read_bytes())
    proc = run("mha_course.selfgrade", copy, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{copy} as 01_shapes" in proc.stdout and "Total: 6 / 6" in proc.stdout


@pytest.mark.parametrize("content", [b"", b'{"cells": [', b"\xff\xfe not json"])
def test_selfgrade_refuses_a_file_that_is_not_a_notebook_in_one_line(tmp_path, content):
    broken = tmp_path / "01_shapes (1).ipynb"
    broken.write_bytes(content)
    proc = run("mha_course.selfgrade", broken, cwd=tmp_path)
    assert proc.returncode == 2
    assert "is not a readable notebook" in proc.stderr and "Traceback" not in proc.stderr


def test_selfgrade_equals_the_judged_grade_on_every_assignment(tmp_path):
    """One designed mistake per assignment, self-graded in one run: the scores the instructor's grading
    gives (test_grading_scores_a/_b prove that grade for the same notebooks)."""
    paths = []
    for assignment in gs.ASSIGNMENTS:
        name, answer, old, new, lost = gs.WRONG_ANSWERS[assignment][0]
        paths.append(tmp_path / assignment / f"{assignment}.ipynb")
        paths[-1].parent.mkdir()
        nbformat.write(gs.submission(assignment, {answer: (old, new)}), paths[-1])
    proc = run("mha_course.selfgrade", *paths, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reports = proc.stdout.split("== ")[1:]
    assert len(reports) == len(gs.ASSIGNMENTS)
    for assignment, report in zip(gs.ASSIGNMENTS, reports):
        lost = gs.WRONG_ANSWERS[assignment][0][4]
        for test, points in gs.expected_scores(assignment, lost).items():
            maximum = gs.points_of_tests(assignment)[test]
            assert f"    {test}: {points:g} / {maximum:g}" in report, report


def test_check_names_a_reference_that_grading_switches_off(notebooks, tmp_path):
    proc = run("mha_course.check", notebooks["reference"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("NOT ALLOWED: mk.split_heads is not available in 01_shapes: it is what Q3 asks you to write "
            "(in split_heads_answer; it scores 0 when graded)") in proc.stdout
    assert "FAIL:" not in proc.stdout  # Validate alone would have passed it


def test_check_refuses_a_file_that_is_not_a_notebook(tmp_path):
    broken = tmp_path / "01_shapes.ipynb"
    broken.write_text('{"cells": [')
    proc = run("mha_course.check", broken, cwd=tmp_path)
    assert proc.returncode == 2
    assert "is not a readable notebook" in proc.stderr and "Traceback" not in proc.stderr


def _answer_cells_that_fail():
    """Q3's answer cell has a SyntaxError, Q4's raises before its def: neither function gets defined."""
    nb = gs.submission(ASSIGNMENT, {"split_heads_answer": ("    B, n, d = x.shape\n", "    B, n, d = (x.shape\n"),
                                    "merge_heads_answer": ("def merge_heads", "raise ValueError('my own check failed')\ndef merge_heads")})
    return nb


def test_check_blames_the_answer_cell_that_failed_under_a_copy_name(tmp_path):
    copy = tmp_path / "01_shapes-Copy1.ipynb"  # JupyterLab's name for a copy: the assignment is read from the cells
    nbformat.write(_answer_cells_that_fail(), copy)
    proc = run("mha_course.check", copy, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the cell run before this test failed with SyntaxError: '(' was never closed" in proc.stdout
    assert "the cell run before this test failed with ValueError: my own check failed" in proc.stdout
    assert "NameError" not in proc.stdout and "Traceback" not in proc.stdout
    assert ".py, line" not in proc.stdout  # the kernel's temporary file is not the learner's business
    assert proc.stdout.count("FAIL:") == 2  # Q1 and Q2 are answered and pass


def test_selfgrade_blames_the_answer_cell_that_failed_under_a_copy_name(tmp_path):
    copy = tmp_path / "01_shapes (1).ipynb"
    nbformat.write(_answer_cells_that_fail(), copy)
    proc = run("mha_course.selfgrade", copy, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{copy} as 01_shapes" in proc.stdout
    assert "split_heads_matches_mha_kit: 0 / 2  <- SyntaxError: the answer cell above failed: '(' was never closed" in proc.stdout
    assert "merge_heads_matches_mha_kit: 0 / 1  <- ValueError: the answer cell above failed: my own check failed" in proc.stdout
    assert ".py, line" not in proc.stdout
    assert "Total: 3 / 6" in proc.stdout
