"""Grade a class of untrusted notebooks: ``python -m mha_course.safegrade --assignment NAME SUBMISSIONS``.

``SUBMISSIONS`` is nbgrader's ``submitted/`` layout (``<student>/<assignment>/<file>.ipynb``), a flat
folder of ``<student>.ipynb`` files, a folder or ``.zip`` downloaded from an LMS (file names such as
``smithjohn_12345_6789_01_shapes.ipynb``: see ``--lms-pattern``), or a ``.zip`` of any of these.
Every submission is graded by nbgrader's ``autograde`` with the course's own ``nbgrader_config.py``
(rebuilt on the release, a sandboxed kernel: design in :mod:`mha_course.trusted`), in a throw-away
course of its own, by ``--workers`` processes at once. Written under ``--out`` (default
``safegrade_out/<assignment>``):

* ``results/<student>.json`` and ``autograded/<student>/`` - one per submission, written
  atomically; a rerun of the same command skips every submission whose result is there (and whose
  file did not change): a batch killed half-way finishes the rest;
* ``reports/<student>.txt`` - score per question, what was flagged and why;
* ``grades.csv`` - one line per student (``student_id``, ``assignment``, score, status, LMS id, flags).

The course (``--course``, default the current folder, as for ``nbgrader`` itself) then holds what
``nbgrader autograde`` would have left: ``submitted/`` and ``autograded/`` for every student, and
their grades in ``gradebook.db`` (flagged submissions marked *needs manual grade*, with the reason),
so formgrader, ``nbgrader generate_feedback`` and ``nbgrader export`` work on them.

Several machines: give each one a shard (``--shard 1/3`` grades every third student), copy the
``results/`` folders into one, and run ``--merge-only`` there; results are per student, so shards
merge by copying files.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from .course import ASSIGNMENTS, REPO_ROOT, course_api, run_step
from .trusted import sandbox, structure
from .trusted.records import CourseWriter, one_line, write_reports
from .trusted.worker import error_result, grade_one, init_worker

#: File names of an LMS download (Canvas's): ``<student>_[LATE_]<lms id>_<submission id>_<file>[-<n>].ipynb``.
LMS_PATTERN = r"(?P<student>[A-Za-z0-9]+)_(?P<late>LATE_)?(?P<lms_id>\d+)_(?P<submission>\d+)_(?P<file>.+?)(?:-(?P<copy>\d+))?\.ipynb"
#: A zip is not unpacked past this many bytes in all, nor past this many members.
MAX_ZIP_BYTES, MAX_ZIP_MEMBERS = 1024**3, 10_000


class IntakeError(ValueError):
    """The submissions cannot be graded as given (nothing written yet)."""


def discover(source, assignment, scratch, lms_pattern=LMS_PATTERN):
    """``({student: (path, notes, extra)}, skipped)`` from a submitted/-style folder, a flat or LMS folder, a zip.

    ``notes`` are ``[severity, text]`` flags for the report; ``extra`` holds what a result keeps
    (``raw_name``, ``lms_id``). ``skipped`` lists, by raw name, the entries that are nobody's
    submission (hidden entries, other files). A path that leads out of ``source`` (a symbolic link)
    is not followed: ``path`` is then ``""`` and the submission is graded as the blank release,
    flagged. Student ids are safe for file names and never take another's: a name changed to make
    it safe gets a suffix of its own.
    """
    archive = Path(source) if Path(source).suffix == ".zip" else None
    source = _unzip(archive, assignment, scratch) if archive else Path(source)
    found, skipped, raw = {}, [], {}
    for entry in sorted(source.iterdir()):
        if entry.name.startswith(".") or not (entry.is_dir() or entry.suffix == ".ipynb"):
            skipped.append(entry.name)
            continue
        name, path, notes, extra = _entry(entry, assignment, lms_pattern)
        if not _inside(Path(path), source):
            path, notes = "", [["review", f"{Path(path).name!r} is a symbolic link out of the submissions: not followed"]]
        student, base = _student(name), _safe(name)
        if student in found and extra.get("lms_id") and found[student][2].get("lms_id") == extra["lms_id"]:
            keep = max(found[student][0], path, key=lambda p: _copy_number(p, lms_pattern))
            notes.append(["info", f"several files from the LMS: graded {Path(keep).name!r}"])
            found[student] = (keep, found[student][1] + notes, extra)
            continue
        raw.setdefault(base, []).append(entry.name)
        shown = f"{archive.name}:{Path(path).relative_to(source)}" if archive and path else path
        found[student] = (path, notes, {**extra, "raw_name": entry.name, "source": shown})
    return _collisions(found, raw), skipped


def _collisions(found, raw):
    """Every submission whose safe name another one shares is named in the notes of both."""
    for names in raw.values():
        if len(names) > 1:
            text = f"names that are the same once made safe: {', '.join(repr(n) for n in names)}"
            for other in [s for s, (_, _, extra) in found.items() if extra.get("raw_name") in names]:
                found[other][1].append(["info", text])
    return found


def _copy_number(path, lms_pattern):
    match = re.fullmatch(lms_pattern, Path(path).name)
    return int(match["copy"]) if match and match.groupdict().get("copy") else 0


def _entry(entry, assignment, lms_pattern):
    """``(name, path, notes, extra)`` of one student's folder or notebook."""
    if not entry.is_dir():
        match = re.fullmatch(lms_pattern, entry.name)
        if match:
            extra = {"lms_id": match.groupdict().get("lms_id") or ""}
            notes = [["info", "handed in late (LMS)"]] if match.groupdict().get("late") else []
            return match["student"], str(entry), notes, extra
        return entry.stem.removesuffix(f"_{assignment}"), str(entry), [], {}
    folder = entry / assignment if (entry / assignment).is_dir() else entry
    files, wanted = sorted(folder.glob("*.ipynb")), folder / f"{assignment}.ipynb"
    if wanted in files:
        return entry.name, str(wanted), [], {}
    if files:
        return entry.name, str(files[0]), [["info", f"file named {files[0].name!r}, not {assignment}.ipynb"]], {}
    others = ", ".join(repr(p.name) for p in sorted(folder.iterdir())[:5])
    return entry.name, "", [["review", f"no notebook in {folder.name!r}/" + (f" (found: {others})" if others else "")]], {}


def _inside(path, root):
    """True when ``path`` (links resolved) stays inside ``root``; ``""`` (no file) is inside."""
    return str(path) in ("", ".") or path.resolve().is_relative_to(root.resolve())


def _unzip(archive_path, assignment, scratch):
    """Extract a zip of submissions; return its root.

    No absolute paths, no ``..``, at most :data:`MAX_ZIP_MEMBERS` members; each member is read
    as a stream and cut at :data:`~mha_course.trusted.structure.MAX_BYTES` (the sizes a zip
    declares are not trusted), and the whole stops at :data:`MAX_ZIP_BYTES`.
    """
    target, total = Path(scratch) / "unzipped", 0
    with zipfile.ZipFile(archive_path) as archive:
        members = archive.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise IntakeError(f"{archive_path.name} holds {len(members)} files; at most {MAX_ZIP_MEMBERS}")
        for member in members:
            name = member.filename
            if name.startswith("/") or ".." in Path(name).parts or member.is_dir():
                continue
            written = _extract(archive, member, target / name)
            total += written
            if total > MAX_ZIP_BYTES:
                raise IntakeError(f"{archive_path.name} unpacks to more than {MAX_ZIP_BYTES // 2**20} MiB: refused")
    target.mkdir(parents=True, exist_ok=True)
    roots = [p for p in target.iterdir() if p.is_dir() and not p.name.startswith(".")]
    single = len(roots) == 1 and not (roots[0] / assignment).is_dir() and not list(target.glob("*.ipynb"))
    return roots[0] if single else target


def _extract(archive, member, path):
    """Copy one member to ``path`` up to ``MAX_BYTES`` (past it: ``<path>.too-large`` instead); bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written, limit = 0, structure.MAX_BYTES
    with archive.open(member) as src, open(path, "wb") as dst:
        while chunk := src.read(1 << 20):
            written += len(chunk)
            if written > limit:
                break
            dst.write(chunk)
    if written > limit:
        path.unlink()
        Path(f"{path}.too-large").write_text(f"more than {limit} bytes\n")
    return min(written, limit)


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64].lstrip(".") or "unnamed"


def _student(name):
    """A student id safe for file names; a name changed to make it so gets a suffix of its own."""
    safe = _safe(name)
    if safe == name:
        return safe
    return f"{safe[:55]}-{hashlib.sha256(name.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def prepare_template(assignment, folder):
    """A throw-away course with the source and the generated release of ``assignment``."""
    root = Path(folder) / "template"
    shutil.copytree(REPO_ROOT / "solutions" / assignment, root / "solutions" / assignment)
    api = course_api(root, **{"CourseDirectory.release_directory": "release"})
    run_step(api.generate_assignment(assignment, force=True), f"generate_assignment {assignment}")
    return root


def tasks(found, assignment, out, work, template, mode, timeout, shard=None, budget=0):
    """The submissions still to grade (no result yet, or the file changed), as worker tasks."""
    todo = []
    for index, (student, (path, notes, *extra)) in enumerate(sorted(found.items())):
        if shard and index % shard[1] != shard[0] - 1:
            continue
        result = out / "results" / f"{student}.json"
        if _still_valid(result, path):
            continue
        result.unlink(missing_ok=True)  # stale (changed file, grader error) or unreadable: graded again
        todo.append({"student": student, "alias": f"s{index}", "assignment": assignment, "path": path,
                     "notes": notes, "result": str(result), "work": str(work), "template": str(template),
                     "mode": mode, "timeout": timeout, "budget": budget, **(extra[0] if extra else {})})
    return todo


def _still_valid(result, path):
    """True when ``result`` exists, reads, was not a grader error, and is of the file as it is now."""
    try:
        previous = json.loads(result.read_text())
    except (OSError, ValueError):
        return False
    return previous.get("status") != "error" and previous.get("sha256") == structure.sha256_of(path)


def run_pool(todo, workers, progress=True, grade=grade_one, on_result=None):
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
    parser = argparse.ArgumentParser(
        prog="python -m mha_course.safegrade", description=__doc__.splitlines()[0],
        epilog="The course is the current folder's nbgrader course (its nbgrader_config.py), as for nbgrader "
               "itself; run the command from the course's root folder or give --course.")
    parser.add_argument("submissions", help="submitted/-style folder, flat or LMS folder of notebooks, or .zip")
    parser.add_argument("--assignment", required=True, help="e.g. 01_shapes (a folder of the course's solutions/)")
    parser.add_argument("--out", help="output folder (default safegrade_out/<assignment>)")
    parser.add_argument("--course", default=".", help="the nbgrader course whose submitted/, autograded/ and "
                        "gradebook.db get the grades (default: the current folder)")
    # Two kernels per core: a kernel spends much of its time waiting on messages, not computing.
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1),
                        help="submissions graded at once (default: twice the cores)")
    parser.add_argument("--timeout", type=int, help="seconds a cell may run (default: the course's Execute.timeout)")
    parser.add_argument("--budget", type=int, help="seconds a whole submission may run (default 10 x --timeout)")
    parser.add_argument("--lms-pattern", default=LMS_PATTERN,
                        help="regular expression for LMS file names, with groups student and (optional) lms_id "
                             "and late (default: <student>_[LATE_]<lms id>_<submission id>_<file>[-<n>].ipynb)")
    parser.add_argument("--shard", help="K/N: grade only every N-th student starting at the K-th")
    parser.add_argument("--merge-only", action="store_true", help="only write reports and the course")
    parser.add_argument("--no-gradebook", action="store_true", help="do not touch the course")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def _checked(parser, args):
    """Refuse bad options with the rule and the value; return ``args`` with ``args.shard`` as ``(K, N)``."""
    if not (REPO_ROOT / "solutions" / args.assignment).is_dir():
        parser.error(f"no assignment {args.assignment!r} under {REPO_ROOT / 'solutions'} "
                     f"(known: {', '.join(ASSIGNMENTS)})")
    if not args.merge_only and not Path(args.submissions).exists():
        parser.error(f"no submissions at {args.submissions}")
    course = Path(args.course)
    if not args.no_gradebook and args.course == "." and not (course / "nbgrader_config.py").is_file():
        parser.error(f"the current folder ({Path.cwd()}) is not an nbgrader course (no nbgrader_config.py): "
                     "run from the course's root folder, or give --course or --no-gradebook")
    if args.timeout is None:
        args.timeout = int(course_config_timeout())
    args.budget = 10 * args.timeout if args.budget is None else args.budget
    for name in ("workers", "timeout", "budget"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.shard:
        match = re.fullmatch(r"(\d+)/(\d+)", args.shard)
        if not match or not 1 <= int(match[1]) <= int(match[2]):
            parser.error(f"--shard must be K/N with 1 <= K <= N, got {args.shard!r}")
        args.shard = (int(match[1]), int(match[2]))
    try:
        re.compile(args.lms_pattern)
    except re.error as error:
        parser.error(f"--lms-pattern is not a regular expression ({error}): {args.lms_pattern!r}")
    return args


def course_config_timeout():
    """The course's time limit per cell: ``Execute.timeout`` in ``nbgrader_config.py``."""
    from .course import course_config

    return course_config(REPO_ROOT).Execute.timeout


def main(argv=None):
    parser = _parser()
    args = _checked(parser, parser.parse_args(argv))
    out = Path(args.out or Path("safegrade_out") / args.assignment).resolve()
    try:
        found = None if args.merge_only else _intake(args)
    except (IntakeError, zipfile.BadZipFile, OSError) as error:
        print(f"safegrade: {one_line(error)}; nothing was graded or written", file=sys.stderr)
        return 2
    (out / "results").mkdir(parents=True, exist_ok=True)
    with CourseWriter(args.course, args.assignment, out) as writer:
        record = None if args.no_gradebook else _recorder(writer)
        if found is not None:
            _grade_batch(args, found, out, args.shard, record)
        results = write_reports(out, args.assignment)
        for result in results if record else ():
            if result["student"] not in writer.recorded:  # graded earlier (resumed, merged shards)
                writer.record(result)
    review = sum(r["review"] for r in results)
    print(f"{len(results)} graded, {review} flagged for manual review; reports in {out / 'reports'}")
    return 0


def _intake(args):
    """``(found, scratch)``: every submission, after the checks that stop a batch before it writes anything.

    ``scratch`` (where a zip is unpacked) is removed by the batch, or here when a check fails.
    """
    scratch = tempfile.mkdtemp(prefix="mha_sg_")
    try:
        return _checked_intake(args, scratch), scratch
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _checked_intake(args, scratch):
    found, skipped = discover(args.submissions, args.assignment, scratch, args.lms_pattern)
    for name in skipped:
        print(f"safegrade: skipped {name!r} (hidden, or not a notebook or a folder)", file=sys.stderr)
    if not found:
        raise IntakeError(f"no submissions in {args.submissions}" + (f" (only {len(skipped)} skipped entries)"
                                                                     if skipped else ""))
    if not any(path for path, _, _ in found.values()):
        raise IntakeError(f"no submission holds a notebook for {args.assignment} (wrong --assignment?)")
    named = [Path(path).name for path, _, _ in found.values() if path]
    others = {a for a in ASSIGNMENTS if a != args.assignment and all(a in n and args.assignment not in n for n in named)}
    if others:
        raise IntakeError(f"every notebook is named for {', '.join(sorted(others))}, not {args.assignment} "
                          "(wrong --assignment?)")
    return found


def _recorder(writer):
    """``writer.record`` that reports a failure and goes on (the result is on disk; retried at the end)."""
    def record(result):
        try:
            writer.record(result)
        except Exception as error:  # e.g. the gradebook is locked by formgrader
            print(f"\ncourse: {result['student']} not recorded yet ({one_line(error, 200)}); retried at the end",
                  file=sys.stderr)
    return record


def _grade_batch(args, intake, out, shard, on_result):
    found, work = intake
    mode = sandbox.isolation_mode()
    if mode != "bwrap":
        print("!" * 78 + "\n! WARNING: no sandbox (bubblewrap) on this machine: kernels run with resource limits\n"
              "! only; a submission can READ solutions/, the gradebook and other files, and reach the\n"
              "! network. Install bubblewrap (apt-get install bubblewrap) to isolate them.\n" + "!" * 78,
              file=sys.stderr)
    try:
        template = prepare_template(args.assignment, work)
        todo = tasks(found, args.assignment, out, work, template, mode, args.timeout, shard, args.budget)
        print(f"{len(found)} submissions, {len(found) - len(todo)} already graded, {len(todo)} to grade "
              f"with {args.workers} workers (isolation: {mode})", file=sys.stderr)
        run_pool(todo, args.workers, progress=not args.no_progress, on_result=on_result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sandbox.remove_empty_cgroups()


if __name__ == "__main__":
    sys.exit(main())
