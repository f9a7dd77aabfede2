"""Grade one submission in its own throw-away nbgrader course (run by the pool of workers)."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import traceback
import warnings
from pathlib import Path

import nbformat

from ..course import course_api
from ..grading import scores_of
from . import sandbox, structure

GUARD = "mha_course.trusted.guard.GuardedExecute"


def _preprocessors():
    from nbgrader.converters import Autograde

    names = [f"{p.__module__}.{p.__name__}" if isinstance(p, type) else p for p in Autograde.class_traits()["autograde_preprocessors"].default()]
    return [GUARD if name.endswith(".Execute") else name for name in names]


def init_worker(jupyter_path, batch_pid=None):
    """Pool initializer: kernels are looked up (``mha-sandbox``) in ``jupyter_path``; the worker
    dies with the batch process ``batch_pid``."""
    if batch_pid:
        sandbox.die_with(batch_pid)
    os.environ["JUPYTER_PATH"] = jupyter_path
    os.environ["MHA_GRADER_PID"] = str(os.getpid())  # a kernel whose grader is gone does not start
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    warnings.simplefilter("ignore")  # SQLAlchemy and deprecation notices from inside nbgrader


def grade_one(task):
    """Grade ``task`` (a dict from :func:`mha_course.safegrade.tasks`); write and return its result."""
    try:
        result = _grade(task)
    except Exception:  # the batch goes on; the report says what broke
        return error_result(task, "grader error: " + traceback.format_exc(limit=3)[-800:])
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
            "sha256": structure.sha256_of(task.get("path", "")), "isolation": task.get("mode", "")}


def _grade(task):
    assignment, alias = task["assignment"], task["alias"]
    work = Path(tempfile.mkdtemp(prefix="c", dir=task["work"]))
    # Unix socket paths are limited to about 100 bytes: the kernel's go in a short folder of their own
    sockets = tempfile.mkdtemp(prefix="mha", dir="/tmp" if os.path.isdir("/tmp") else None)
    try:
        root = work / "course"
        shutil.copytree(task["template"], root)
        notebook, flags = _notebook(task, root / "release" / assignment / f"{assignment}.ipynb")
        folder = root / "submitted" / alias / assignment
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        scratch = root / "autograded" / alias / assignment
        api = course_api(root, **_overrides(task, work / "verdict.json", Path(sockets) / "k"))
        step = api.autograde(assignment, alias, force=True)
        sandbox.remove_empty_cgroups()
        if not step.get("success"):
            raise RuntimeError(f"nbgrader autograde failed: {step.get('error', '')}\n{step.get('log', '')[-1500:]}")
        scores = {gid: list(pair) for gid, pair in scores_of(api, assignment, alias).items()}
        verdict = json.loads((work / "verdict.json").read_text()) if (work / "verdict.json").is_file() else {}
        return _result(task, scores, flags, verdict, _errors(scratch / f"{assignment}.ipynb"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(sockets, ignore_errors=True)


def _notebook(task, release_path):
    """The notebook to run (the release with the learner's answers in) and the flags found so far."""
    submitted, problem = structure.load(task["path"])
    release = nbformat.read(release_path, as_version=4)
    notebook, flags = structure.rebuild(submitted, release, structure.protected_names(task["setup"]))
    flags = [list(f) for f in flags]
    if problem:
        flags.insert(0, ["review", f"{problem}: graded as the blank release"])
    return notebook, flags + [list(note) for note in task.get("notes", [])]


def _overrides(task, verdict_file, ipc_prefix):
    """nbgrader's settings for one sandboxed, guarded autograde."""
    return {
        "Autograde.autograde_preprocessors": _preprocessors(),
        "Execute.timeout": task["timeout"],
        "Execute.kernel_name": sandbox.KERNEL_NAME,
        "GuardedExecute.setup_source": task["setup"],
        "GuardedExecute.verdict_file": str(verdict_file),
        "GuardedExecute.ipc_prefix": str(ipc_prefix) if task["mode"] == "bwrap" else "",
        "GuardedExecute.budget": task.get("budget", 0),
        "CourseDirectory.release_directory": "release",
    }


def _errors(path):
    """``{test grade_id: "Ename: message"}`` of the failed test cells of the executed notebook."""
    errors = {}
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    errors[meta["grade_id"]] = f"{output.get('ename')}: {str(output.get('evalue'))[:200]}"
    return errors


def _result(task, scores, flags, verdict, errors):
    timeouts = verdict.get("timeouts") or sorted(g for g, e in errors.items() if e.startswith("CellTimeoutError"))
    if timeouts:
        flags.append(["info", f"timed out in {', '.join(timeouts)} (a test cell that timed out scored 0)"])
    if verdict.get("output_capped"):
        flags.append(["review", f"printed more than {verdict['output_capped'] // 2**20} MiB: the rest of the output, "
                                "checks included, was dropped"])
    if verdict.get("budget_spent"):
        flags.append(["review", f"time budget of {verdict['budget_spent']} s spent: the cells after it were not run "
                                "(scored 0)"])
    if verdict.get("kernel_died"):
        flags.append(["info", f"crash: {verdict['kernel_died'][:200]} (cells after it scored 0)"])
    for grade_id, problems in verdict.get("tampered", {}).items():
        flags.append(["review", f"tampering around {grade_id}: {'; '.join(problems)[:300]} (scored 0)"])
    total = sum(score for score, _ in scores.values())
    review = any(severity == "review" for severity, _ in flags)
    return {**_base(task), "status": "review" if review else ("flagged" if flags else "ok"), "review": review,
            "scores": scores, "total": total, "max_total": sum(m for _, m in scores.values()),
            "errors": errors, "flags": flags}
