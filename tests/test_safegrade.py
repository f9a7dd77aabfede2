"""safegrade: honest and hostile submissions of exercise 01 graded together, each to its designed outcome."""
from __future__ import annotations

import json
import socket

import pytest

from safegrade_support import (A, bom_crlf, expected_scores, honest, honest_lost, honest_variants, hostile, results,
                               safegrade, scores, write)

pytestmark = pytest.mark.filterwarnings("ignore")

ALL_TESTS = set(expected_scores(A, set()))
# test cells that score 0 when the head_dim answer is broken before its def runs
NO_HEAD_DIM = {"head_dim_transformer_base"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safegrade")
    listener = socket.create_server(("127.0.0.1", 0))  # the grader's own loopback
    students = {**honest(), **honest_variants(), **hostile(listener.getsockname()[1], tmp / "outside.txt"),
                "bom_crlf": bom_crlf(honest()["honest_full"]), "alice_smith": honest()["honest_full"]}
    folder = write(students, tmp / "submitted")
    (folder / "mallory").mkdir()  # her folder is a link to a classmate's
    (folder / "mallory" / A).symlink_to(f"../alice_smith/{A}", target_is_directory=True)
    with listener:
        safegrade(folder, tmp / "out", tmp / "course", "--timeout", "8")  # slack for a loaded CI machine
    return results(tmp / "out"), tmp


def test_honest_grades_are_as_designed(graded):
    for student, lost in honest_lost().items():
        assert scores(graded[0][student]) == expected_scores(A, lost), student
        assert graded[0][student]["status"] == "ok", graded[0][student]["flags"]


def test_a_notebook_saved_with_a_byte_order_mark_and_crlf_is_the_learners(graded):
    """An editor saved it with a UTF-8 byte-order mark and Windows line ends: the learner's own notebook."""
    result = graded[0]["bom_crlf"]
    assert scores(result) == expected_scores(A, set()), result["flags"]
    assert (result["status"], result["flags"]) == ("ok", []), result["flags"]


def test_a_folder_that_links_to_a_classmates_is_not_graded_as_its_own(graded):
    """mallory/<assignment> -> ../alice_smith/<assignment>: alice's notebook is graded once, for alice."""
    mallory, owner = graded[0]["mallory"], graded[0]["alice_smith"]
    assert scores(mallory) == expected_scores(A, ALL_TESTS) and mallory["status"] == "review"
    assert any(level == "review" and "mallory" in text and "alice_smith" in text for level, text in mallory["flags"])
    assert scores(owner) == expected_scores(A, set()) and owner["file"].endswith(f"alice_smith/{A}/{A}.ipynb")
    assert owner["status"] == "flagged" and any("mallory" in text for _, text in owner["flags"])  # to know only
    report = (graded[1] / "out" / "reports" / "mallory.txt").read_text()
    assert "review both mallory and alice_smith" in report


def test_a_cell_that_wrote_to_stderr_keeps_its_points_with_a_note_in_the_report(graded):
    """A debug print to stderr in a right answer: the judge decides the score, stderr is a note (issue 37)."""
    result = graded[0]["stderr_print"]
    assert scores(result) == expected_scores(A, set()) and result["reasons"] == {}
    assert result["notes"]["head_dim_transformer_base"].startswith("Your code wrote to stderr (my own debug line)")
    report = (graded[1] / "out" / "reports" / "stderr_print.txt").read_text()
    assert "head_dim_transformer_base: 1 / 1  (Your code wrote to stderr (my own debug line)" in report


@pytest.mark.parametrize("student", sorted(honest_variants()) + ["patch_isclose"])
def test_right_answers_written_any_way_score_full_and_ok(graded, student):
    """Helpers, prints, type hints, a figure, extra cells; a patched numpy buys and costs nothing."""
    result = graded[0][student]
    assert scores(result) == expected_scores(A, set()), result["reasons"]
    assert (result["status"], result["flags"]) == ("ok", []), result["flags"]


@pytest.mark.parametrize("student", ["edit_tests", "delete_tests", "forge_metadata", "corrupt", "empty", "not_utf8",
                                     "other_assignment"])
def test_changed_tests_and_unreadable_files_earn_nothing_and_are_flagged(graded, student):
    result = graded[0][student]
    assert result["review"] and result["flags"], result
    assert scores(result) == expected_scores(A, ALL_TESTS), (student, result["flags"])


@pytest.mark.parametrize("student, lost, flag", [
    ("sleep", NO_HEAD_DIM, "timed out in head_dim_answer (limit 8 s per cell"),
    ("memory_bomb", NO_HEAD_DIM, None), ("fake_output", NO_HEAD_DIM, None),
    ("exit_kernel", {"merge_heads_matches_mha_kit"}, "crash"), ("segfault", {"merge_heads_matches_mha_kit"}, "crash"),
    ("break_builtins", {"merge_heads_matches_mha_kit"}, "the kernel stopped answering"),
    ("huge_output", set(), None),
    ("fake_int", NO_HEAD_DIM, None),  # an int that equals anything: not plain data, judged outside the kernel
    ("flood", ALL_TESTS, "printed more than 8 MiB"),  # the rest of the output, results included, is dropped
])
def test_hostile_runs_do_not_stop_the_batch(graded, student, lost, flag):
    result = graded[0][student]
    assert scores(result) == expected_scores(A, lost), (student, result["flags"])
    if flag:
        assert any(flag in text for _, text in result["flags"]), result["flags"]


def test_a_timeout_names_the_course_limit_in_the_autograded_notebook(graded):
    notebook = json.loads((graded[1] / "course" / "autograded" / "sleep" / A / f"{A}.ipynb").read_text())
    errors = [o for c in notebook["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert any(o["ename"] == "CellTimeoutError" and "time limit of 8 s per cell" in o["evalue"] for o in errors)


def test_sandbox_limits_processes(graded):
    result = graded[0]["many_processes"]
    if result["isolation"] != "bwrap":
        pytest.skip("no bubblewrap here: no process limit of the kernel's own")
    assert scores(result) == expected_scores(A, set()), result["reasons"]  # the 1000 forks were stopped


def test_sandbox_limits_what_is_written(graded):
    result = graded[0]["fill_disk"]
    if result["isolation"] != "bwrap":
        pytest.skip("no bubblewrap here: the kernel writes where the grader can")
    assert scores(result) == expected_scores(A, set()), result["reasons"]  # read-only folder, small /tmp


def test_sandbox_limits_the_memory_of_all_processes_together(graded):
    import os

    result = graded[0]["memory_forks"]
    if result["isolation"] != "bwrap" or not os.access("/sys/fs/cgroup/memory", os.W_OK):
        pytest.skip("no memory cgroup for the kernels here: only the per-process address-space limit")
    assert scores(result) == expected_scores(A, set()), result["reasons"]  # one fork was killed


def test_sandbox_hides_the_solutions(graded):
    result = graded[0]["read_solutions"]
    lost = NO_HEAD_DIM if result["isolation"] == "bwrap" else set()
    assert scores(result) == expected_scores(A, lost)


def test_the_kernels_folder_holds_none_of_the_courses_grading_files(graded):
    """nbgrader copies an assignment's other files beside the notebook: never grading_*.py (sandbox or not)."""
    result = graded[0]["list_grading_files"]
    assert scores(result) == expected_scores(A, set()), result["reasons"]


@pytest.mark.parametrize("student", ["network", "write_outside"])
def test_sandbox_has_no_network_and_writes_only_its_scratch(graded, student):
    result = graded[0][student]
    if result["isolation"] != "bwrap":
        pytest.skip("no bubblewrap here: the kernel can reach the network and the disk")
    assert scores(result) == expected_scores(A, NO_HEAD_DIM), result["reasons"]
    assert not (graded[1] / "outside.txt").exists()


def test_reports_and_the_course_hold_what_autograde_leaves(graded):
    from nbgrader.api import Gradebook

    tmp = graded[1]
    report = (tmp / "out" / "reports" / "edit_tests.txt").read_text()
    assert "locked cell head_dim_transformer_base edited" in report
    with Gradebook(f"sqlite:///{tmp / 'course' / 'gradebook.db'}") as gradebook:
        got = {s.student.id: (s.score, s.needs_manual_grade) for s in gradebook.assignment_submissions(A)}
        flagged = gradebook.find_submission_notebook(A, A, "edit_tests")
        comments, is_flagged = [c.auto_comment for c in flagged.comments if c.auto_comment], flagged.flagged
    assert got["honest_full"] == (6.0, False) and got["edit_tests"] == (0.0, True)
    assert is_flagged and any(c.startswith("Flagged for review: locked cell") for c in comments), comments
    assert len(got) == len(graded[0])
    for student in graded[0]:
        assert (tmp / "course" / "autograded" / student / A / f"{A}.ipynb").is_file(), student
