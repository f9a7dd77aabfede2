"""The learner's commands: ``mha_course.check`` (visible tests) and ``mha_course.selfgrade`` (all tests).

Each command runs in this process (its ``main``, as ``python -m`` calls it), so no test pays for a new
Python; the self-grader grades several notebooks in one run, as a learner may, and two runs cover
its tests.
"""
import contextlib
import io

import nbformat
import pytest

import grading_support as gs
from mha_course import check, selfgrade

ASSIGNMENT = "01_shapes"  # the smallest notebook: the commands, not the exercises, are under test


def run(command, *args):
    """``(exit code, stdout, stderr)`` of ``command.main(args)``; a usage error exits with argparse's 2."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = command.main([str(arg) for arg in args])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def _with_a_test_switched_off(nb):
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_transformer_base":
            cell.source = cell.source.replace('run("head_dim", _call, (512, 8))', 'pass  # run("head_dim", _call, (512, 8))')
    return nb


def _answer_cells_that_fail():
    """Q1's answer cell is badly indented, Q3's has a SyntaxError, Q4's raises before its def: none of the
    three functions gets defined. Q1's test passes its function through ``_call``, so the real error is named."""
    return gs.submission(ASSIGNMENT, {"head_dim_answer": ("    return d_model // num_heads\n",
                                                         "    d_h = d_model // num_heads\n      return d_h\n"),
                                      "split_heads_answer": ("    B, n, d = x.shape\n", "    B, n, d = (x.shape\n"),
                                      "merge_heads_answer": ("def merge_heads",
                                                             "raise ValueError('my own check failed')\ndef merge_heads")})


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory):
    """The release, a complete answer, one with a float where an int belongs, one with a test cell edited,
    one calling a switched-off reference; JupyterLab copies: of the complete answer, saved by an editor with
    a byte-order mark and Windows line ends, and of answer cells that fail."""
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
    paths["bom_copy"] = folder / "01_shapes-Copy1.ipynb"
    text = nbformat.writes(gs.submission(ASSIGNMENT, {})).replace("\n", "\r\n")
    paths["bom_copy"].write_bytes(b"\xef\xbb\xbf" + text.encode())
    paths["failing_copy"] = folder / "01_shapes (1).ipynb"
    nbformat.write(_answer_cells_that_fail(), paths["failing_copy"])
    return paths


@pytest.fixture(scope="module")
def full_marks(notebooks):
    """One self-grading run: the complete answer and its byte-order-marked copy."""
    return run(selfgrade, notebooks["complete"], notebooks["bom_copy"])


@pytest.fixture(scope="module")
def losses(notebooks):
    """One self-grading run: the wrong answer and the copy whose answer cells fail."""
    return run(selfgrade, notebooks["wrong"], notebooks["failing_copy"])


def _report(output, notebook):
    """The part of a self-grading run's output about ``notebook``."""
    (section,) = [part for part in output.split("== ")[1:] if part.startswith(f"{notebook}\n")]
    return section


def test_check_fails_on_the_untouched_release(notebooks):
    code, out, err = run(check, notebooks["release"])
    assert code == 1, out + err
    assert out.count("not answered yet") == len(gs.points_of_tests(ASSIGNMENT))


def test_check_passes_a_complete_answer(notebooks):
    code, out, err = run(check, notebooks["complete"])
    assert code == 0, out + err
    assert "all visible tests pass" in out


def test_check_says_what_is_wrong_in_one_line(notebooks):
    code, out, _ = run(check, notebooks["wrong"])
    assert code == 1
    assert "AssertionError: expected head size d_h (d=512, h=8) as an int, got float (64.0): use // or int(...)" in out
    assert "Traceback" not in out and "mha_course" not in out  # the reason, not a traceback
    assert out.count("FAIL:") == 1
    assert "1 failing test cell(s)" in out


def test_check_notices_an_edited_test_cell(notebooks):
    code, out, _ = run(check, notebooks["edited"])
    assert code == 1
    assert "EDITED TEST: Head size of the Transformer base" in out
    assert "1 edited test cell(s)" in out


def test_check_refuses_a_missing_notebook(tmp_path):
    assert run(check, tmp_path / "nope.ipynb")[0] == 2


def test_selfgrade_full_marks_exit_zero_and_reads_the_assignment_of_a_copy(notebooks, full_marks):
    code, out, err = full_marks
    assert code == 0, out + err
    assert f"{notebooks['bom_copy']} as 01_shapes" in out.splitlines()[0]  # named for the assignment by its cells
    for name in ("complete", "bom_copy"):  # a byte-order mark and Windows line ends: the learner's own notebook
        assert "Total: 6 / 6" in _report(out, notebooks[name]) and "Flagged" not in _report(out, notebooks[name])


def test_selfgrade_scores_each_question(notebooks, losses):
    code, out, err = losses
    assert code == 1, out + err
    lines = _report(out, notebooks["wrong"]).splitlines()
    assert "Q1 (head_dim): 0 / 1" in lines
    assert "Q3 (split_heads): 2 / 2" in lines
    assert "Total: 5 / 6" in lines
    assert "HIDDEN" not in out  # the hidden tests' code is never shown


def test_selfgrade_needs_a_known_assignment(tmp_path):
    other = tmp_path / "notes.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), other)
    code, _, err = run(selfgrade, other)
    assert code == 2
    assert "pass --assignment" in err


@pytest.mark.parametrize("content", [b"", b'{"cells": [', b"\xff\xfe not json"])
def test_selfgrade_refuses_a_file_that_is_not_a_notebook_in_one_line(tmp_path, content):
    broken = tmp_path / "01_shapes (1).ipynb"
    broken.write_bytes(content)
    code, _, err = run(selfgrade, broken)
    assert code == 2
    assert "is not a readable notebook" in err and "Traceback" not in err


def test_check_names_a_reference_that_grading_switches_off(notebooks):
    code, out, err = run(check, notebooks["reference"])
    assert code == 1, out + err
    assert ("NOT ALLOWED: mk.split_heads is not available in 01_shapes: it is what Q3 asks you to write "
            "(in split_heads_answer; it scores 0 when graded)") in out
    assert "FAIL:" not in out  # Validate alone would have passed it


def test_check_refuses_a_file_that_is_not_a_notebook(tmp_path):
    broken = tmp_path / "01_shapes.ipynb"
    broken.write_text('{"cells": [')
    code, _, err = run(check, broken)
    assert code == 2
    assert "is not a readable notebook" in err and "Traceback" not in err


def test_check_blames_the_answer_cell_that_failed_under_a_copy_name(notebooks):
    code, out, err = run(check, notebooks["failing_copy"])  # a copy's name: the assignment is read from the cells
    assert code == 1, out + err
    assert "the cell run before this test failed with SyntaxError: '(' was never closed" in out
    assert "the cell run before this test failed with ValueError: my own check failed" in out
    assert "the cell run before this test failed with IndentationError: unexpected indent (line 18)" in out
    assert "NameError" not in out and "Traceback" not in out
    assert ".py, line" not in out  # the kernel's temporary file is not the learner's business
    assert out.count("FAIL:") == 3  # Q2 is answered and passes


def test_selfgrade_blames_the_answer_cell_that_failed_under_a_copy_name(notebooks, losses):
    out = losses[1]
    assert f"{notebooks['failing_copy']} as 01_shapes" in out.splitlines()[0]
    report = _report(out, notebooks["failing_copy"])
    assert "split_heads_matches_mha_kit: 0 / 2  <- SyntaxError: the answer cell above failed: '(' was never closed" in report
    assert "merge_heads_matches_mha_kit: 0 / 1  <- ValueError: the answer cell above failed: my own check failed" in report
    assert ("head_dim_transformer_base: 0 / 1  <- IndentationError: the answer cell above failed: unexpected indent "
            "(line 18)") in report
    assert ".py, line" not in report  # the kernel's temporary file is not the learner's business
    assert "Total: 2 / 6" in report
