"""Grade a class of untrusted notebooks: ``python -m mha_course.safegrade --assignment NAME SUBMISSIONS``.

``SUBMISSIONS`` is nbgrader's ``submitted/`` layout (``<student>/<assignment>/<file>.ipynb``), a flat
folder of ``<student>.ipynb`` files, or a ``.zip`` of either. Every submission is graded by
nbgrader's ``autograde`` in its own throw-away course, in a sandboxed kernel, with tamper checks
(design: :mod:`mha_course.trusted`), by ``--workers`` processes at once. Written under ``--out``
(default ``safegrade_out/<assignment>``):

* ``results/<student>.json`` - one per submission, written atomically; a rerun of the same command
  skips every submission whose result is there (and whose file did not change): a batch killed
  half-way finishes the rest;
* ``reports/<student>.txt`` - score per question, what was flagged and why;
* ``grades.csv`` - one line per student; and the instructor's gradebook (``--course``, default this
  repository: ``gradebook.db``) gets every score through nbgrader's Gradebook API, flagged
  submissions marked for manual grading.

Several machines: give each one a shard (``--shard 1/3`` grades every third student), copy the
``results/`` folders into one, and run ``--merge-only`` there; results are per student, so shards
merge by copying files.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat

from .course import REPO_ROOT, course_api, run_step
from .trusted import sandbox, structure
from .trusted.records import GradebookWriter, write_reports
from .trusted.worker import error_result, grade_one, init_worker


def discover(source, assignment, scratch):
    """``{student: (path, notes)}`` from a submitted/-style folder, a flat folder or a zip.

    ``notes`` are ``[severity, text]`` flags for the report. A path that leads out of ``source``
    (a symbolic link) is not followed: ``path`` is then ``""`` and the submission is graded as
    the blank release, flagged. Student names are made safe for file names and kept unique.
    """
    source = _unzip(Path(source), assignment, scratch) if Path(source).suffix == ".zip" else Path(source)
    found = {}
    for entry in sorted(source.iterdir()):
        if entry.name.startswith(".") or not (entry.is_dir() or entry.suffix == ".ipynb"):
            continue  # .ipynb_checkpoints and other hidden entries are nobody's submission
        name, path, notes = _entry(entry, assignment)
        if not _inside(Path(path), source):
            path, notes = "", [["review", f"{Path(path).name} is a symbolic link out of the submissions: not followed"]]
        student = _student(name)
        if student in found:  # two names made safe the same way: both graded
            student = next(f"{student}-{k}" for k in range(2, len(found) + 3) if f"{student}-{k}" not in found)
            notes.append(["info", f"name {name!r} clashed with another submission's: graded as {student}"])
        found[student] = (path, notes)
    return found


def _entry(entry, assignment):
    """``(name, path, notes)`` of one student's folder or notebook."""
    if not entry.is_dir():
        return entry.stem.removesuffix(f"_{assignment}"), str(entry), []
    folder = entry / assignment if (entry / assignment).is_dir() else entry
    files, wanted = sorted(folder.glob("*.ipynb")), folder / f"{assignment}.ipynb"
    if wanted in files:
        return entry.name, str(wanted), []
    if files:
        return entry.name, str(files[0]), [["info", f"file named {files[0].name}, not {assignment}.ipynb"]]
    others = ", ".join(sorted(p.name for p in folder.iterdir())[:5])
    return entry.name, str(wanted), [["review", f"no notebook in {folder.name}/" + (f" (found: {others})" if others else "")]]


def _inside(path, root):
    """True when ``path`` (links resolved) stays inside ``root``."""
    return path.resolve().is_relative_to(root.resolve())


def _unzip(archive_path, assignment, scratch):
    """Extract a zip of submissions (no absolute paths, no ``..``, no oversized member); return its root."""
    target = Path(scratch) / "unzipped"
    with zipfile.ZipFile(archive_path) as archive:
        for member in archive.infolist():
            name = member.filename
            if name.startswith("/") or ".." in Path(name).parts:
                continue
            if member.file_size <= structure.MAX_BYTES:
                archive.extract(member, target)
            else:  # left in the zip; the student's folder says why
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                (target / f"{name}.too-large").write_text(f"{member.file_size} bytes\n")
    target.mkdir(parents=True, exist_ok=True)
    roots = [p for p in target.iterdir() if p.is_dir()]
    single = len(roots) == 1 and not (roots[0] / assignment).is_dir() and not list(target.glob("*.ipynb"))
    return roots[0] if single else target


def _student(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "unnamed"


def prepare_template(assignment, folder):
    """A throw-away course with the source and the generated release of ``assignment``."""
    root = Path(folder) / "template"
    shutil.copytree(REPO_ROOT / "solutions" / assignment, root / "solutions" / assignment)
    api = course_api(root, **{"CourseDirectory.release_directory": "release"})
    run_step(api.generate_assignment(assignment, force=True), f"generate_assignment {assignment}")
    return root


def setup_source(assignment):
    """The instructor's first plain code cell (the imports), run before any learner code."""
    nb = nbformat.read(REPO_ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    return next((c.source for c in nb.cells if c.cell_type == "code" and "nbgrader" not in c.metadata), "")


def tasks(found, assignment, out, work, template, mode, timeout, shard=None, budget=0):
    """The submissions still to grade (no result yet, or the file changed), as worker tasks."""
    todo, setup = [], setup_source(assignment)
    for index, (student, (path, notes)) in enumerate(sorted(found.items())):
        if shard and index % shard[1] != shard[0] - 1:
            continue
        result = out / "results" / f"{student}.json"
        if _still_valid(result, path):
            continue
        result.unlink(missing_ok=True)  # stale (changed file, grader error) or unreadable: graded again
        todo.append({"student": student, "alias": f"s{index}", "assignment": assignment, "path": path,
                     "notes": notes, "result": str(result), "work": str(work), "template": str(template),
                     "mode": mode, "timeout": timeout, "budget": budget, "setup": setup})
    return todo


def _still_valid(result, path):
    """True when ``result`` exists, reads, was not a grader error, and is of the file as it is now."""
    try:
        previous = json.loads(result.read_text())
    except (OSError, ValueError):
        return False
    return previous.get("status") != "error" and previous.get("sha256") == structure.sha256_of(path)


def run_pool(todo, workers, jupyter_path, progress=True, grade=grade_one, on_result=None):
    """Grade ``todo`` with ``workers`` processes; a worker that dies is replaced and the rest go on.

    ``grade(task)`` (default :func:`~mha_course.trusted.worker.grade_one`) writes ``task["result"]``
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
        alone = next((t for t in todo if t["result"] in suspects), None)
        batch = [alone] if alone else todo
        for task in batch:
            _started(task).unlink(missing_ok=True)
        size, initargs = 1 if alone else workers, (jupyter_path, os.getpid())
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
    return Path(task["result"]).with_suffix(".started")


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
        if Path(task["result"]).is_file():
            continue  # finished as the pool broke: on disk, recorded at the end
        if alone and task in batch:  # alone in its pool: nobody else to blame
            arrived(error_result(task, "the grading process died on this submission, twice (once alone)"))
            _started(task).unlink(missing_ok=True)
            continue
        if task in batch and _started(task).exists():
            suspects.add(task["result"])
            attributed = True
        left.append(task)
    return left, attributed


def _bar(done, total, text, width=30):
    filled = width * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {text[:40]:<40}", end="", file=sys.stderr, flush=True)


def _parser():
    parser = argparse.ArgumentParser(prog="python -m mha_course.safegrade", description=__doc__.splitlines()[0])
    parser.add_argument("submissions", help="submitted/-style folder, flat folder of notebooks, or .zip")
    parser.add_argument("--assignment", required=True, help="e.g. 01_shapes (a folder of solutions/)")
    parser.add_argument("--out", help="output folder (default safegrade_out/<assignment>)")
    parser.add_argument("--course", default=str(REPO_ROOT), help="course whose gradebook.db gets the grades")
    # Two kernels per core: a kernel spends much of its time waiting on messages, not computing.
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1),
                        help="submissions graded at once (default: twice the cores)")
    parser.add_argument("--timeout", type=int, default=30, help="seconds a cell may run (default 30)")
    parser.add_argument("--budget", type=int, help="seconds a whole submission may run (default 10 x --timeout)")
    parser.add_argument("--shard", help="K/N: grade only every N-th student starting at the K-th")
    parser.add_argument("--merge-only", action="store_true", help="only write reports and the gradebook")
    parser.add_argument("--no-gradebook", action="store_true", help="do not touch the course's gradebook")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def _checked(parser, args):
    """Refuse bad options with the rule and the value; return ``args`` with ``args.shard`` as ``(K, N)``."""
    if not (REPO_ROOT / "solutions" / args.assignment).is_dir():
        parser.error(f"no assignment {args.assignment} under {REPO_ROOT / 'solutions'}")
    if not args.merge_only and not Path(args.submissions).exists():
        parser.error(f"no submissions at {args.submissions}")
    args.budget = 10 * args.timeout if args.budget is None else args.budget
    for name in ("workers", "timeout", "budget"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.shard:
        match = re.fullmatch(r"(\d+)/(\d+)", args.shard)
        if not match or not 1 <= int(match[1]) <= int(match[2]):
            parser.error(f"--shard must be K/N with 1 <= K <= N, got {args.shard!r}")
        args.shard = (int(match[1]), int(match[2]))
    return args


def main(argv=None):
    parser = _parser()
    args = _checked(parser, parser.parse_args(argv))
    out = Path(args.out or Path("safegrade_out") / args.assignment).resolve()
    (out / "results").mkdir(parents=True, exist_ok=True)
    with GradebookWriter(args.course, args.assignment) as writer:
        record = None if args.no_gradebook else _recorder(writer)
        if not args.merge_only:
            _grade_batch(args, out, args.shard, record)
        results = write_reports(out, args.assignment)
        for result in results if record else ():
            if result["student"] not in writer.recorded:  # graded earlier (resumed, merged shards)
                writer.record(result)
    review = sum(r["review"] for r in results)
    print(f"{len(results)} graded, {review} flagged for manual review; reports in {out / 'reports'}")
    return 0


def _recorder(writer):
    """``writer.record`` that reports a failure and goes on (the result is on disk; retried at the end)."""
    def record(result):
        try:
            writer.record(result)
        except Exception as error:  # e.g. the gradebook is locked by formgrader
            print(f"\ngradebook: {result['student']} not recorded yet ({error}); retried at the end", file=sys.stderr)
    return record


def _grade_batch(args, out, shard, on_result):
    mode = sandbox.isolation_mode()
    if mode != "bwrap":
        print("!" * 78 + "\n! WARNING: no sandbox (bubblewrap) on this machine: kernels run with resource limits\n"
              "! only; a submission can READ solutions/, the gradebook and other files, and reach the\n"
              "! network. Install bubblewrap (apt-get install bubblewrap) to isolate them.\n" + "!" * 78,
              file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="mha_sg_") as work:
        found = discover(args.submissions, args.assignment, work)
        template = prepare_template(args.assignment, work)
        jupyter_path = sandbox.install_kernelspec(Path(work) / "jupyter", mode)
        todo = tasks(found, args.assignment, out, work, template, mode, args.timeout, shard, args.budget)
        print(f"{len(found)} submissions, {len(found) - len(todo)} already graded, {len(todo)} to grade "
              f"with {args.workers} workers (isolation: {mode})", file=sys.stderr)
        run_pool(todo, args.workers, jupyter_path, progress=not args.no_progress, on_result=on_result)
    sandbox.remove_empty_cgroups()


if __name__ == "__main__":
    sys.exit(main())
