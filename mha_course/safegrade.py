"""Grade a class of untrusted notebooks: ``python -m mha_course.safegrade --assignment NAME SUBMISSIONS``.

``SUBMISSIONS`` is nbgrader's ``submitted/`` layout (``<student>/<assignment>/<file>.ipynb``), a flat
folder of ``<student>.ipynb`` files, a folder or ``.zip`` downloaded from an LMS (file names such as
``smithjohn_12345_6789_01_shapes.ipynb``: see ``--lms-pattern``), or a ``.zip`` of any of these.
Every submission is graded by nbgrader's ``autograde`` with the course's own ``nbgrader_config.py``
(rebuilt on the release, a sandboxed kernel: design in :mod:`mha_course.plugins`), in a throw-away
course of its own, by ``--workers`` processes at once. Written under ``--out`` (default
``safegrade_out/<assignment>``):

* ``results/<student>.json`` and ``autograded/<student>/`` - one per submission, written
  atomically; a rerun of the same command skips every submission whose result is there (and whose
  file did not change): a batch killed half-way finishes the rest;
* ``reports/<student>.txt`` - score per question, what was flagged and why;
* ``grades.csv`` - one line per student (``student_id``, ``assignment``, score, status, LMS id, flags).

Once the class is graded, a similarity pass (:mod:`mha_course.grade.similarity`, copydetect's winnowing)
flags for review byte-identical notebooks, answer cells two classmates share, and answer cells
taken from code a learner can read (``mha_kit``, the judge's files of the browser edition);
``--no-similarity`` skips it, and a shard leaves it to ``--merge-only``.

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
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat

from .course import ASSIGNMENTS, REPO_ROOT
from .grade.intake import LMS_PATTERN, IntakeError, discover
from .grade.pipeline import template
from .grade.pool import run_pool, tasks
from .grade.records import CourseWriter, write_reports
from .grade.similarity import mark
from .notebook import answers, one_line
from .plugins import sandbox
from .plugins.api import course_config


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
    parser.add_argument("--no-similarity", action="store_true",
                        help="skip the similarity pass (copies between classmates, code a learner can read)")
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
        flagged = set() if args.no_similarity or args.shard else set(_similarity(out, args.assignment))
        results = write_reports(out, args.assignment)
        for result in results if record else ():
            if result["student"] not in writer.recorded:  # graded earlier (resumed, merged shards)
                writer.record(result)
            elif result["student"] in flagged:  # recorded as it arrived; the similarity pass came after
                writer.reflag(result)
    review = sum(r["review"] for r in results)
    print(f"{len(results)} graded, {review} flagged for manual review; reports in {out / 'reports'}")
    return 0


def _similarity(out, assignment):
    """The similarity pass over the whole class (:mod:`mha_course.grade.similarity`); the students whose flags changed."""
    release = REPO_ROOT / "exercises" / assignment / f"{assignment}.ipynb"
    return mark(out, assignment, answers(nbformat.read(release, as_version=4)))


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
        course = template(args.assignment, Path(work) / "template")
        todo = tasks(found, args.assignment, out, work, course, mode, args.timeout, shard, args.budget)
        print(f"{len(found)} submissions, {len(found) - len(todo)} already graded, {len(todo)} to grade "
              f"with {args.workers} workers (isolation: {mode})", file=sys.stderr)
        run_pool(todo, args.workers, progress=not args.no_progress, on_result=on_result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sandbox.remove_empty_cgroups()


if __name__ == "__main__":
    sys.exit(main())
