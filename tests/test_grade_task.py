"""A task handed to a grading worker is a small frozen dataclass that pickles, one per submission, sharing its batch."""
from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest

from mha_course.course import ASSIGNMENTS
from mha_course.grade.pipeline import Template
from mha_course.grade.pool import Batch, Task, tasks

A = ASSIGNMENTS[0]


def _found(folder):
    late = folder / "ann.ipynb"
    late.write_text("{}")
    return {"ann": (str(late), [["info", "late"]], {"lms_id": "123", "raw_name": "ann.ipynb", "source": "x.zip"}),
            "bob": ("", [["review", "no notebook"]], {})}


def test_tasks_are_frozen_dataclasses_of_one_shared_batch(tmp_path):
    todo = tasks(_found(tmp_path), A, tmp_path / "out", tmp_path / "work", Template(tmp_path, A),
                 "bwrap", 30, budget=300)
    assert [type(t) for t in todo] == [Task, Task]
    ann, bob = todo
    assert ann.batch is bob.batch == Batch(A, str(tmp_path), str(tmp_path / "work"), "bwrap", 30, 300)
    assert (ann.student, ann.alias, ann.lms_id, ann.raw_name, ann.source) == ("ann", "s0", "123", "ann.ipynb", "x.zip")
    assert ann.notes == (("info", "late"),) and bob.path == "" and bob.alias == "s1"
    assert ann.result == str(tmp_path / "out" / "results" / "ann.json")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ann.student = "mallory"
    assert len(dataclasses.fields(Task)) < 12 and len(dataclasses.fields(Batch)) < 12


def test_a_task_pickles_to_a_worker_and_back_equal(tmp_path):
    todo = tasks(_found(tmp_path), A, tmp_path / "out", tmp_path, Template(tmp_path, A), "x", 5)
    assert [pickle.loads(pickle.dumps(task)) for task in todo] == todo
    json.dumps(dataclasses.asdict(todo[0]))  # plain data all through: nothing a worker could not rebuild


def test_an_intake_field_the_task_does_not_know_is_refused(tmp_path):
    found = {"ann": (str(Path(tmp_path) / "a.ipynb"), [], {"lms_id": "1", "colour": "red"})}
    with pytest.raises(TypeError, match="colour"):
        tasks(found, A, tmp_path / "out", tmp_path, Template(tmp_path, A), "x", 5)
