"""safegrade: honest and hostile submissions of exercise 01 graded together, each to its designed outcome."""
from __future__ import annotations

import socket

import pytest

from grading_support import grade_all
from safegrade_support import A, expected_scores, honest, hostile, results, safegrade, scores, write

pytestmark = pytest.mark.filterwarnings("ignore")

ALL_TESTS = set(expected_scores(A, set()))
# test cells that score 0 when the head_dim answer is broken before its def runs
NO_HEAD_DIM = {"head_dim_transformer_base"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safegrade")
    listener = socket.create_server(("127.0.0.1", 0))  # the grader's own loopback
    folder = write({**honest(), **hostile(listener.getsockname()[1], tmp / "outside.txt")}, tmp / "submitted")
    with listener:
        safegrade(folder, tmp / "out", tmp / "course", "--timeout", "8")  # slack for a loaded CI machine
    return results(tmp / "out"), tmp


def test_honest_grades_equal_plain_nbgrader(graded, tmp_path):
    plain = grade_all({A: honest()}, tmp_path)[A]
    for student, alone in plain.items():
        assert scores(graded[0][student]) == alone, student
        assert graded[0][student]["status"] == "ok", graded[0][student]["flags"]


@pytest.mark.parametrize("student", ["patch_isclose", "patch_builtins", "patch_expect", "fake_int", "quiet_errors",
                                     "mutate_table", "rewrite_helpers", "string_access", "loop_target", "flood",
                                     "edit_tests",
                                     "delete_tests", "forge_metadata", "corrupt", "empty", "not_utf8",
                                     "other_assignment"])
def test_tampering_earns_nothing_and_is_flagged(graded, student):
    result = graded[0][student]
    assert result["review"] and result["flags"], result
    assert scores(result) == expected_scores(A, ALL_TESTS), (student, result["flags"])


@pytest.mark.parametrize("student, lost, flag", [
    ("endless_loop", NO_HEAD_DIM, "timed out"), ("sleep", NO_HEAD_DIM, "timed out"),
    ("memory_bomb", NO_HEAD_DIM, None), ("fake_output", NO_HEAD_DIM, None),
    ("exit_kernel", {"merge_heads_matches_mha_kit"}, "crash"), ("segfault", {"merge_heads_matches_mha_kit"}, "crash"),
    ("huge_output", set(), None),
    ("hidden_subclass", {"split_heads_matches_mha_kit", "merge_heads_matches_mha_kit"}, "tampering"),
    ("masked_array", {"split_heads_matches_mha_kit"}, None),  # compared as a plain array
])
def test_hostile_runs_do_not_stop_the_batch(graded, student, lost, flag):
    result = graded[0][student]
    assert scores(result) == expected_scores(A, lost), (student, result["flags"])
    if flag:
        assert any(flag in text for _, text in result["flags"]), result["flags"]


def test_sandbox_limits_processes(graded):
    result = graded[0]["many_processes"]
    assert any("suspicious" in text for _, text in result["flags"]), result["flags"]
    if result["isolation"] != "bwrap":
        pytest.skip("no bubblewrap here: no process limit of the kernel's own")
    assert scores(result) == expected_scores(A, set()), result["errors"]  # the 1000 forks were stopped


def test_sandbox_limits_what_is_written(graded):
    result = graded[0]["fill_disk"]
    if result["isolation"] != "bwrap":
        pytest.skip("no bubblewrap here: the kernel writes where the grader can")
    assert scores(result) == expected_scores(A, set()), result["errors"]  # read-only folder, small /tmp


def test_sandbox_limits_the_memory_of_all_processes_together(graded):
    import os

    result = graded[0]["memory_forks"]
    if result["isolation"] != "bwrap" or not os.access("/sys/fs/cgroup/memory", os.W_OK):
        pytest.skip("no memory cgroup for the kernels here: only the per-process address-space limit")
    assert scores(result) == expected_scores(A, set()), result["errors"]  # one fork was killed


def test_sandbox_hides_the_solutions(graded):
    result = graded[0]["read_solutions"]
    lost = NO_HEAD_DIM if result["isolation"] == "bwrap" else set()
    assert scores(result) == expected_scores(A, lost)


@pytest.mark.parametrize("student", ["network", "write_outside"])
def test_sandbox_has_no_network_and_writes_only_its_scratch(graded, student):
    result = graded[0][student]
    if result["isolation"] != "bwrap":
        pytest.skip("no bubblewrap here: the kernel can reach the network and the disk")
    assert scores(result) == expected_scores(A, NO_HEAD_DIM), result["errors"]
    assert not (graded[1] / "outside.txt").exists()


def test_reports_and_gradebook(graded):
    from nbgrader.api import Gradebook

    tmp = graded[1]
    report = (tmp / "out" / "reports" / "fake_int.txt").read_text()
    assert "tampering" in report and "head_dim_transformer_base" in report
    with Gradebook(f"sqlite:///{tmp / 'course' / 'gradebook.db'}") as gradebook:
        got = {s.student.id: (s.score, s.needs_manual_grade) for s in gradebook.assignment_submissions(A)}
    assert got["honest_full"] == (6.0, False) and got["patch_isclose"][0] == 0.0 and got["patch_isclose"][1]
    assert len(got) == len(graded[0])
