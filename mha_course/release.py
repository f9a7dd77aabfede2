"""Regenerate the release: ``python -m mha_course.release [--into DIR] [ASSIGNMENT ...]``.

Generates every assignment's release in a throw-away course made from ``solutions/``
(:func:`mha_course.grade.pipeline.template`: ``nbgrader generate_assignment``) and copies it to
``exercises/`` (or to ``DIR/exercises``). The gradebook of that course is thrown away with it, so
the repository gets no ``gradebook.db``.

Book: chapter "Instructor's guide".
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from .course import ASSIGNMENTS, REPO_ROOT
from .grade.pipeline import template


def release(assignments=ASSIGNMENTS, into=REPO_ROOT):
    """Generate the release of ``assignments`` into ``into / "exercises"``; return that folder."""
    target = Path(into) / "exercises"
    with tempfile.TemporaryDirectory(prefix="mha_release_") as tmp:
        for name in assignments:
            course = template(name, Path(tmp) / name)
            shutil.rmtree(target / name, ignore_errors=True)
            shutil.copytree(course.release.parent, target / name)
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
