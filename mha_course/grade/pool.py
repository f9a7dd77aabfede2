"""safegrade's pool of workers: each grades one submission at a time, in a throw-away course of its own.

:func:`run_pool` hands the tasks (:func:`tasks`: the submissions without a valid result) to
``--workers`` processes; a :class:`Task` (one submission, and its :class:`Batch`'s settings) is what
travels to a worker. Each runs :func:`grade_one`: a copy of the assignment's template course,
the one pipeline (:func:`mha_course.grade.pipeline.grade`: the rebuild, the sandboxed kernel, the judge,
the flags) and the result written atomically to ``results/<student>.json``, with the autograded
notebook beside it (``autograded/<student>/<assignment>.ipynb``). A worker that dies is replaced
and its task graded again, alone; a submission that kills its worker twice gets an error result.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import resource
import shutil
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..plugins import sandbox
from . import pipeline
from .intake import sha256_of

#: Address space of a grading worker: a submission that makes the grader itself swell (a file built
#: to blow up when parsed) gets an error result instead of the machine's memory.
WORKER_MEMORY = 4 * 1024**3


@dataclass(frozen=True)
class Batch:
    """What every task of one safegrade run shares."""

    assignment: str
    template: str  # the folder of the assignment's template course (:func:`mha_course.grade.pipeline.template`)
    work: str  # where a worker makes its throw-away copy of that course
    mode: str = ""  # the isolation of the kernels (:func:`mha_course.plugins.sandbox.isolation_mode`)
    timeout: int = 60  # seconds a cell may run
    budget: int = 0  # seconds a whole submission may run (0: no budget)


@dataclass(frozen=True)
class Task:
    """One submission for a worker (pickled to it): who, which file, where the result goes, the batch."""

    student: str
    result: str  # the result's file, ``results/<student>.json``
    path: str = ""  # the notebook ("": the submission holds none, graded as the blank release)
    alias: str = ""  # the student's name in the throw-away course (``s3``: safe whatever the real name)
    notes: tuple = ()  # ``((severity, text), ...)`` found at intake (a late upload, a link)
    lms_id: str = ""
    raw_name: str = ""  # the name as submitted, when it had to be made safe
    source: str = ""  # where the file came from (the zip member, the folder)
    batch: Batch = None


def init_worker(batch_pid=None):
    """Pool initializer: the worker dies with the batch process ``batch_pid``; its memory is capped."""
    if batch_pid:
        sandbox.die_with(batch_pid)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > WORKER_MEMORY:
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, hard))
    os.environ["MHA_GRADER_PID"] = str(os.getpid())  # a kernel whose grader is gone does not start
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    warnings.simplefilter("ignore")  # SQLAlchemy and deprecation notices from inside nbgrader


def grade_one(task):
    """Grade ``task`` (a :class:`Task` from :func:`tasks`); write and return its result."""
    try:
        result = _grade(task)
    except Exception as error:  # the batch goes on; the report says what broke, the log how
        log = Path(task.result).parent.parent / "logs" / f"{task.student}.txt"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc() + getattr(error, "details", ""))
        why = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        return error_result(task, f"grader error: {why} (details in logs/{task.student}.txt)")
    return write_result(task, result)


def error_result(task, why):
    """Write and return a result of no score for ``task``, flagged for review with ``why``."""
    failed = pipeline.Result(task.batch.assignment if task.batch else "", flags=(("review", why),), error=why)
    return write_result(task, {**_base(task), **failed.to_dict()})


def write_result(task, result):
    out = Path(task.result)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, out)  # atomic: a killed batch leaves whole results or none
    return result


def _base(task):
    """What a result says of the submission itself: who, which file, where it came from, how isolated."""
    return {"student": task.student, "file": task.path, "sha256": sha256_of(task.path),
            "isolation": task.batch.mode if task.batch else "", "lms_id": task.lms_id,
            "raw_name": task.raw_name or task.student, "source": task.source or task.path}


def _grade(task):
    """The one pipeline on a copy of the template course; the autograded notebook is kept beside the result."""
    batch = task.batch
    work = Path(tempfile.mkdtemp(prefix="c", dir=batch.work))
    try:
        course = pipeline.Template(Path(batch.template), batch.assignment).copy(work / "course")
        settings = {"Execute.timeout": batch.timeout, "SandboxedExecute.budget": batch.budget}
        alias = task.alias
        result = pipeline.grade(course, {alias: task.path}, settings, {alias: task.notes})[alias]
        keep = Path(task.result).parent.parent / "autograded" / task.student / f"{batch.assignment}.ipynb"
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(course.autograded(alias), keep)
        return {**_base(task), **result.to_dict()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tasks(found, assignment, out, work, template, mode, timeout, shard=None, budget=0):
    """The submissions still to grade (no result yet, or the file changed), as :class:`Task` s of one :class:`Batch`."""
    batch = Batch(assignment, str(template.root), str(work), mode, timeout, budget)
    todo = []
    for index, (student, (path, notes, *extra)) in enumerate(sorted(found.items())):
        if shard and index % shard[1] != shard[0] - 1:
            continue
        result = out / "results" / f"{student}.json"
        if _still_valid(result, path):
            continue
        result.unlink(missing_ok=True)  # stale (changed file, grader error) or unreadable: graded again
        todo.append(Task(student, str(result), path or "", f"s{index}", tuple(tuple(note) for note in notes),
                         batch=batch, **(extra[0] if extra else {})))
    return todo


def _still_valid(result, path):
    """True when ``result`` exists, reads, was not a grader error, and is of the file as it is now."""
    try:
        previous = json.loads(result.read_text())
    except (OSError, ValueError):
        return False
    return previous.get("status") != "error" and previous.get("sha256") == sha256_of(path)


def run_pool(todo, workers, progress=True, grade=grade_one, on_result=None):
    """Grade ``todo`` with ``workers`` processes; a worker that dies is replaced and the rest go on.

    ``grade(task)`` (default :func:`grade_one`) writes ``task.result``
    and returns the result. A task whose grading raises gets an error result. The tasks running
    when a worker died are graded again one at a time, alone in a pool: the one that kills that
    worker too gets an error result, the others their grades. ``on_result(result)`` runs here, in
    the main process, as each result arrives.
    """
    done, total, suspects, stalls = 0, len(todo), set(), 0

    def arrived(result):
        nonlocal done
        done += 1
        if on_result:
            on_result(result)
        if progress:
            _bar(done, total, f"{result['student']}: {result['status']}")
    while todo:
        alone = next((t for t in todo if t.result in suspects), None)
        batch = [alone] if alone else todo
        for task in batch:
            _started(task).unlink(missing_ok=True)
        size, initargs = 1 if alone else workers, (os.getpid(),)
        with cf.ProcessPoolExecutor(size, initializer=init_worker, initargs=initargs) as pool:
            futures = {pool.submit(_attempt, grade, task): task for task in batch}
            try:
                for future in cf.as_completed(futures):
                    arrived(_outcome(future, futures[future]))
                    todo = [t for t in todo if t is not futures[future]]
            except cf.process.BrokenProcessPool:
                todo, attributed = _after_break(todo, batch, suspects, alone is not None, arrived)
                stalls = 0 if attributed else stalls + 1
                if stalls == 3:  # workers die before they take any submission: not the submissions' doing
                    raise RuntimeError("the grading workers died 3 times before grading anything; results so far "
                                       "are kept, rerun the same command to go on")
    if progress and total:
        print(file=sys.stderr)


def _started(task):
    return Path(task.result).with_suffix(".started")


def _attempt(grade, task):
    """In a worker: mark ``task`` as started (so a dying worker is traced to it), then grade it."""
    _started(task).touch()
    result = grade(task)
    _started(task).unlink(missing_ok=True)
    return result


def _outcome(future, task):
    try:
        return future.result()
    except cf.process.BrokenProcessPool:
        raise
    except Exception as error:  # the grading itself failed: the report says so, the batch goes on
        return error_result(task, f"grader error: {type(error).__name__}: {error}"[:800])


def _after_break(todo, batch, suspects, alone, arrived):
    """``(tasks left, whether the death was traced to a task)`` after a worker died; a task that
    killed a worker of its own gets an error result."""
    left, attributed = [], alone
    for task in todo:
        if Path(task.result).is_file():
            continue  # finished as the pool broke: on disk, recorded at the end
        if alone and task in batch:  # alone in its pool: nobody else to blame
            arrived(error_result(task, "the grading process died on this submission, twice (once alone)"))
            _started(task).unlink(missing_ok=True)
            continue
        if task in batch and _started(task).exists():
            suspects.add(task.result)
            attributed = True
        left.append(task)
    return left, attributed


def _bar(done, total, text, width=30):
    filled = width * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {text[:40]:<40}", end="", file=sys.stderr, flush=True)
