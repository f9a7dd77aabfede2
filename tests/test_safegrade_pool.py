"""safegrade's pool of workers: a worker that dies is replaced, its task graded again, nothing lost.

The grading functions live in ``safegrade_multi`` (a module, so the workers can unpickle them) and
count their attempts with files next to the result: ``<result>.attempt1``, ``.attempt2``...
"""
from __future__ import annotations

import json
from pathlib import Path

from mha_course.grade.pool import Task, run_pool
from safegrade_multi import die_once_grade, raise_grade


def _todo(folder, names):
    return [Task(name, str(Path(folder) / f"{name}.json")) for name in names]


def _attempts(task):
    result = Path(task.result)
    return len(list(result.parent.glob(result.name + ".attempt*")))


def test_a_killed_worker_is_replaced_and_its_task_graded_again(tmp_path):
    todo, arrived = _todo(tmp_path, ["ok_a", "ok_b", "die", "ok_c", "ok_d", "ok_e"]), []
    run_pool(list(todo), 2, progress=False, grade=die_once_grade,
             on_result=lambda result: arrived.append(result["student"]))
    # here, in this process, once per result that arrives (a result left on disk by a broken pool
    # is not announced: the caller reads it from the results folder)
    assert arrived.count("die") == 1 and len(arrived) == len(set(arrived)), arrived
    for task in todo:
        assert Path(task.result).is_file(), f"{task.student}: no result"
        recorded = json.loads(Path(task.result).read_text())["attempts"]
        # a task whose result was written is never graded again
        assert recorded == _attempts(task), task.student
        if task.student == "die":
            assert recorded == 2, task.student  # killed once, then graded by a new pool
        else:  # at most once more, when a dying worker took the pool down while it ran
            assert recorded in (1, 2), task.student


def test_a_submission_that_kills_every_worker_gets_an_error_result(tmp_path):
    todo = _todo(tmp_path, ["ok_a", "die_always", "ok_b", "ok_c"])
    run_pool(list(todo), 2, progress=False, grade=die_once_grade)
    result = json.loads(Path(todo[1].result).read_text())
    assert _attempts(todo[1]) == 2 and result["status"] == "error" and result["review"], result
    assert "died on this submission, twice" in result["flags"][0][1]
    for task in todo[:1] + todo[2:]:
        assert json.loads(Path(task.result).read_text())["attempts"] in (1, 2), task.student


def test_a_grading_error_becomes_that_submissions_error_result(tmp_path):
    todo, arrived = _todo(tmp_path, ["raise_1", "ok_a", "ok_b", "ok_c", "ok_d", "ok_e"]), []
    run_pool(list(todo), 2, progress=False, grade=raise_grade,
             on_result=lambda result: arrived.append(result["student"]))
    assert sorted(arrived) == sorted(task.student for task in todo)
    for task in todo:
        assert _attempts(task) == 1, task.student
        result = json.loads(Path(task.result).read_text())
        if task.student == "raise_1":
            assert result["status"] == "error" and "grading raise_1 failed" in result["flags"][0][1], result
        else:
            assert result == {"attempts": 1}, task.student
