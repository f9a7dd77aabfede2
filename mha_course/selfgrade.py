"""Grade your own notebook, hidden tests included: ``python -m mha_course.selfgrade NOTEBOOK``.

For self-study, outside a class. It grades your notebook through the pipeline the instructor's
grading runs (:mod:`mha_course.grade.pipeline`): a throw-away nbgrader course made from ``solutions/``,
your notebook handed in as student ``me`` and autograded (the hidden tests put back into the test
cells, the kernel given the assignment's graded kit of ``mha_kit``, the results judged outside it
by :mod:`mha_course.judge`), and prints the points of every question and test cell, with the
one-line reason of each failure and what was flagged. It never shows the hidden tests' code.
Several notebooks grade in one run. Exits with 0 on full marks, 1 otherwise, 2 on a usage error (a
missing file, a file that is not a notebook, an assignment it cannot tell).

Book: chapter "Exercises".
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .course import ASSIGNMENTS
from .grade.pipeline import grade, quiet, template
from .notebook import one_line
from .plugins.api import assignment_of

STUDENT = "me"


def selfgrade_many(pairs):
    """The :class:`~mha_course.grade.pipeline.Result` of every ``(notebook, assignment)``, graded in one process."""
    results = []
    with tempfile.TemporaryDirectory(prefix="mha_selfgrade_") as tmp, quiet():
        courses = {a: template(a, Path(tmp) / a) for a in dict.fromkeys(a for _, a in pairs)}
        for index, (notebook, assignment) in enumerate(pairs):
            student = f"{STUDENT}{index or ''}"
            results.append(grade(courses[assignment], {student: notebook})[student])
    return results


def print_report(result):
    """Print points per question and per test cell, the reason of each loss, the note of a test that kept
    its points (a correct earlier answer put in place of yours, a warning) and the flags; return the totals."""
    print("\n".join(result.lines()))
    print(f"Total: {result.total:g} / {result.max_total:g}")
    for severity, text in result.flags:
        print(f"Flagged ({severity}): {one_line(text)}")
    return result.total, result.max_total


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mha_course.selfgrade", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", metavar="notebook",
                        help="your notebook(s), e.g. exercises/03_kv_cache/03_kv_cache.ipynb")
    parser.add_argument("--assignment", help="which assignment they answer (default: from the file name or, "
                                             "for a copy such as '01_shapes-Copy1.ipynb', from its cells)")
    args = parser.parse_args(argv)
    pairs = []
    for notebook in map(Path, args.notebooks):
        if not notebook.is_file():
            parser.error(f"no such notebook: {notebook}")
        try:
            assignment = args.assignment or assignment_of(notebook)
        except ValueError as error:
            parser.error(str(error))
        if assignment not in ASSIGNMENTS:
            parser.error(f"cannot tell the assignment from {notebook.name!r}; pass --assignment, one of {', '.join(ASSIGNMENTS)}")
        pairs.append((notebook, assignment))
    print(f"Grading {', '.join(f'{nb} as {a}' for nb, a in pairs)} (hidden tests included); "
          "this takes a few seconds ...", flush=True)
    full = True
    for (notebook, _), result in zip(pairs, selfgrade_many(pairs)):
        if len(pairs) > 1:
            print(f"== {notebook}")
        total, maximum = print_report(result)
        full = full and total == maximum
    return 0 if full else 1


if __name__ == "__main__":
    sys.exit(main())
