"""Grade one submission in its own throw-away nbgrader course (run by the pool of workers).

The throw-away course has the instructor's ``nbgrader_config.py``, so the submission goes through
exactly the steps of ``nbgrader autograde`` in the instructor's course (the rebuild, the sandboxed
kernel, the judge, the flags). The worker keeps the autograded notebook next to the result
(``autograded/<student>/<assignment>.ipynb``) for :class:`~.records.CourseWriter`.
"""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import tempfile
import traceback
import warnings
from pathlib import Path

import nbformat

from ..course import course_api
from ..grading import scores_of
from . import sandbox, structure
from .execute import add_flags, flags_of


#: Address space of a grading worker: a submission that makes the grader itself swell (a file built
#: to blow up when parsed) gets an error result instead of the machine's memory.
WORKER_MEMORY = 4 * 1024**3


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
    """Grade ``task`` (a dict from :func:`mha_course.safegrade.tasks`); write and return its result."""
    try:
        result = _grade(task)
    except Exception as error:  # the batch goes on; the report says what broke, the log how
        log = Path(task["result"]).parent.parent / "logs" / f"{task['student']}.txt"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc() + getattr(error, "details", ""))
        why = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        return error_result(task, f"grader error: {why} (details in logs/{task['student']}.txt)")
    return write_result(task, result)


def error_result(task, why):
    """Write and return a result of no score for ``task``, flagged for review with ``why``."""
    return write_result(task, {**_base(task), "status": "error", "review": True, "scores": {}, "total": 0,
                               "max_total": 0, "errors": {}, "flags": [["review", why]]})


def write_result(task, result):
    out = Path(task["result"])
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, out)  # atomic: a killed batch leaves whole results or none
    return result


def _base(task):
    return {"student": task["student"], "assignment": task.get("assignment", ""), "file": task.get("path", ""),
            "sha256": structure.sha256_of(task.get("path", "")), "isolation": task.get("mode", ""),
            "lms_id": task.get("lms_id", ""), "raw_name": task.get("raw_name", task["student"]),
            "source": task.get("source", task.get("path", ""))}


def _grade(task):
    assignment, alias = task["assignment"], task["alias"]
    work = Path(tempfile.mkdtemp(prefix="c", dir=task["work"]))
    try:
        root = work / "course"
        shutil.copytree(task["template"], root)
        folder = root / "submitted" / alias / assignment
        folder.mkdir(parents=True)
        flags = _submit(task, root / "release" / assignment / f"{assignment}.ipynb", folder / f"{assignment}.ipynb")
        api = course_api(root, **_overrides(task))
        step = api.autograde(assignment, alias, force=True)
        if not step.get("success"):
            raise AutogradeFailed(step)
        scores = {gid: list(pair) for gid, pair in scores_of(api, assignment, alias).items()}
        graded = nbformat.read(root / "autograded" / alias / assignment / f"{assignment}.ipynb", as_version=4)
        add_flags(graded, flags)
        keep = Path(task["result"]).parent.parent / "autograded" / task["student"] / f"{assignment}.ipynb"
        keep.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(graded, keep)
        return _result(task, scores, flags_of(graded), _errors(graded))
    finally:
        shutil.rmtree(work, ignore_errors=True)


class AutogradeFailed(RuntimeError):
    """nbgrader's autograde failed: the message is its last line, ``details`` its log and traceback."""

    def __init__(self, step):
        self.details = f"{step.get('log', '')}\n{step.get('error', '')}"
        errors = [line.strip() for line in self.details.splitlines()
                  if re.match(r"\s*[\w.]*(Error|Exception): ", line) and "Please see the" not in line]
        super().__init__(f"nbgrader autograde failed ({errors[-1] if errors else 'see the log'})")


def _submit(task, release_path, target):
    """Put the submission, rebuilt on the release, where nbgrader reads it; return the intake's flags.

    The rebuild is the one nbgrader's ``RebuildOnRelease`` does (it finds nothing more to change); done
    here first, a file nbformat could not even write back (a cell that is a number) is still graded.
    A file that cannot be read as a notebook is graded as the blank release (flagged).
    """
    submitted, problem = structure.load(task["path"])
    flags = [list(note) for note in task.get("notes", [])]
    if problem:
        flags.insert(0, ["review", f"{problem}: graded as the blank release"])
    notebook, changes = structure.rebuild(submitted, nbformat.read(release_path, as_version=4))
    nbformat.write(notebook, target)
    return flags + [list(change) for change in changes]


def _overrides(task):
    """nbgrader's settings for one autograde in the throw-away course."""
    return {"Execute.timeout": task["timeout"], "SandboxedExecute.budget": task.get("budget", 0),
            "CourseDirectory.release_directory": "release"}


def _errors(nb):
    """``{test grade_id: "Ename: message"}`` of the failed test cells of the executed notebook."""
    errors = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    errors[meta["grade_id"]] = f"{output.get('ename')}: {str(output.get('evalue'))[:200]}"
    return errors


def _result(task, scores, flags, errors):
    total = sum(score for score, _ in scores.values())
    review = any(severity == "review" for severity, _ in flags)
    return {**_base(task), "status": "review" if review else ("flagged" if flags else "ok"), "review": review,
            "scores": scores, "total": total, "max_total": sum(m for _, m in scores.values()),
            "errors": errors, "flags": flags}
