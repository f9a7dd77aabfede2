"""The pipeline's parts that need no kernel: the Result a grading gives, and the key of a cached release.

Grading itself (``template`` and ``grade``) runs in every grading test: the score tests, the
hostile and honest answers, error carried forward, the commands and safegrade.
"""
import shutil

import pytest
from nbformat.v4 import new_code_cell, new_output

import mha_course.grade.pipeline as pipeline
from mha_course.course import ASSIGNMENTS
from mha_course.notebook import failure
from mha_course.grade.pipeline import Result

A = ASSIGNMENTS[0]
QUESTIONS = (("Q1 (head_dim)", ("t1",)), ("Q2 (head_shapes)", ("t2", "t3")))


@pytest.mark.parametrize("outputs, reason", [
    ([new_output("stream", name="stdout", text="All 4 cases passed\n")], None),
    ([new_output("error", ename="AssertionError", evalue="expected 64, got 64.0", traceback=[])],
     "AssertionError: expected 64, got 64.0"),
    # a debug print to stderr in the learner's function: a note (mha_course.plugins.streams), never a failure
    ([new_output("stream", name="stderr", text="my own debug line\n" * 3)], None),
])
def test_the_one_line_reason_of_a_failed_cell(outputs, reason):
    assert failure(new_code_cell("run(...)", outputs=outputs)) == reason


@pytest.mark.parametrize("flags, error, status", [
    ((), "", "ok"),
    ((("info", "handed in late (LMS)"),), "", "flagged"),  # something to know: the score stands
    ((("info", "late"), ("review", "cells deleted")), "", "review"),  # a person must look
    ((("review", "grader error: boom"),), "grader error: boom", "error"),
])
def test_the_status_says_who_must_look(flags, error, status):
    result = Result(A, {"t1": (1.0, 1.0)}, flags=flags, error=error)
    assert result.status == status and result.review == (status in ("review", "error"))


def test_points_per_question_with_the_reason_of_a_loss_and_the_note_of_a_kept_test():
    notes = {"t2": "Your code warned (RuntimeWarning: x)", "t1": "never shown beside a loss"}
    result = Result(A, {"t1": (0.0, 1.0), "t2": (1.0, 1.0), "t3": (2.0, 2.0)}, {"t1": "AssertionError: wrong"}, notes,
                    questions=QUESTIONS)
    assert result.lines() == ["Q1 (head_dim): 0 / 1", "    t1: 0 / 1  <- AssertionError: wrong",
                              "Q2 (head_shapes): 3 / 3", "    t2: 1 / 1  (Your code warned (RuntimeWarning: x))",
                              "    t3: 2 / 2"]
    assert (result.total, result.max_total) == (3.0, 4.0)


def test_a_result_survives_its_json():
    import json

    result = Result(A, {"t1": (0.0, 1.0), "t2": (1.0, 1.0)}, {"t1": "why"}, {"t2": "note"},
                    (("review", "cells deleted"),), QUESTIONS)
    data = json.loads(json.dumps({"student": "ann", **result.to_dict()}))
    assert Result.from_dict(data) == result
    assert (data["status"], data["total"], data["max_total"], data["review"]) == ("review", 1.0, 2.0, True)


def test_the_cache_key_changes_with_the_assignments_folder_and_nothing_else(tmp_path, monkeypatch):
    """A release is generated again when its source, its folder's files or the course's config change."""
    shutil.copytree(pipeline.REPO_ROOT / "solutions" / A, tmp_path / "solutions" / A)
    shutil.copy(pipeline.REPO_ROOT / "nbgrader_config.py", tmp_path)
    monkeypatch.setattr(pipeline, "REPO_ROOT", tmp_path)
    key = pipeline._key(A)
    (tmp_path / "solutions" / A / "__pycache__").mkdir(exist_ok=True)  # what Python leaves behind does not count
    (tmp_path / "solutions" / A / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert pipeline._key(A) == key
    source = tmp_path / "solutions" / A / f"{A}.ipynb"
    original = source.read_bytes()
    source.write_bytes(original + b" ")
    assert pipeline._key(A) != key
    source.write_bytes(original)
    assert pipeline._key(A) == key
    (tmp_path / "nbgrader_config.py").write_text((tmp_path / "nbgrader_config.py").read_text() + "\n# changed\n")
    assert pipeline._key(A) != key


def test_an_unknown_assignment_is_refused(tmp_path):
    with pytest.raises(ValueError, match=f"unknown assignment '99_nope'; the course manifest has {ASSIGNMENTS[0]}, "):
        pipeline.template("99_nope", tmp_path)
