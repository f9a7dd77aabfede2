"""Regenerate the release: ``python -m mha_course.release [--into DIR] [ASSIGNMENT ...]``.

Runs ``nbgrader generate_assignment`` for every assignment in a throw-away course made from
``solutions/``, and copies the result to ``exercises/`` (or to ``DIR/exercises``). The gradebook
of that course is thrown away with it, so the repository gets no ``gradebook.db``.

Book: chapter "Instructor's guide".
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from .course import ASSIGNMENTS, REPO_ROOT, course_api, run_step


def release(assignments=ASSIGNMENTS, into=REPO_ROOT):
    """Generate the release of ``assignments`` into ``into / "exercises"``; return that folder."""
    target = Path(into) / "exercises"
    with tempfile.TemporaryDirectory(prefix="mha_release_") as tmp:
        for name in assignments:
            shutil.copytree(REPO_ROOT / "solutions" / name, Path(tmp) / "solutions" / name)
        api = course_api(tmp)
        for name in assignments:
            run_step(api.generate_assignment(name, force=True), f"generate_assignment {name}")
            shutil.rmtree(target / name, ignore_errors=True)
            shutil.copytree(Path(tmp) / "exercises" / name, target / name)
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mha_course.release", description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", default=list(ASSIGNMENTS), help="default: every assignment in the course manifest (mha_course.course.COURSE)")
    parser.add_argument("--into", default=str(REPO_ROOT), help="write DIR/exercises (default: the repository)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.assignments) - set(ASSIGNMENTS))
    if unknown:
        parser.error(f"unknown assignments {unknown}; known: {', '.join(ASSIGNMENTS)}")
    print(f"released {len(args.assignments)} assignments into {release(args.assignments, args.into)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
