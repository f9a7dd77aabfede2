"""Submissions of every assignment for the safegrade tests, a runner for any assignment, pool tasks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from grading_support import ROOT, WRONG_ANSWERS, points_of_tests, read, submission
from safegrade_support import results

def wrong(assignment):
    """``(notebook, lost test cells)`` of the first plausible mistake in grading_support."""
    _, answer, old, new, lost = WRONG_ANSWERS[assignment][0]
    return submission(assignment, {answer: (old, new)}), set(lost)


def honest(assignment):
    """``{student: (notebook, lost test cells)}``: the solution, the release, one wrong answer."""
    return {"solution": (submission(assignment, {}), set()),
            "release": (read("exercises", assignment), set(points_of_tests(assignment))),
            "one_wrong": wrong(assignment)}


def start(assignment, folder, out, *extra):
    """Start ``python -m mha_course.safegrade`` on ``folder`` (no gradebook); returns the process."""
    command = [sys.executable, "-m", "mha_course.safegrade", "--assignment", assignment, str(folder),
               "--out", str(out), "--no-gradebook", "--no-progress", "--workers", "2", "--timeout", "8", *extra]
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, out):
    """Wait for ``process``; return ``{student: result dict}`` from ``out``'s result files."""
    _, stderr = process.communicate(timeout=600)
    if process.returncode:
        raise RuntimeError(f"safegrade failed ({process.returncode}):\n{stderr[-4000:]}")
    return results(out)


def die_once_grade(task):
    """A pool task for tests: the first attempt at ``die``, and every one at ``die_always``, kills its worker.

    Every attempt leaves a file ``<result>.attempt<k>``; the result file gets the attempt count.
    """
    result = Path(task.result)
    attempts = len(list(result.parent.glob(result.name + ".attempt*"))) + 1
    (result.parent / f"{result.name}.attempt{attempts}").write_text(str(os.getpid()))
    if task.student == "die" and attempts == 1 or task.student == "die_always":
        os._exit(3)
    result.write_text(json.dumps({"attempts": attempts}))
    return {"student": task.student, "status": "ok"}


def raise_grade(task):
    """A pool task for tests: raises at once for a task named ``raise...``; the others take 0.2 s."""
    result = Path(task.result)
    (result.parent / f"{result.name}.attempt1").write_text(str(os.getpid()))
    if task.student.startswith("raise"):
        raise RuntimeError(f"grading {task.student} failed")
    time.sleep(0.2)  # still running, or not started, when the error reaches the pool
    result.write_text(json.dumps({"attempts": 1}))
    return {"student": task.student, "status": "ok"}
