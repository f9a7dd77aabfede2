"""Grade your own notebook, hidden tests included: ``python -m mha_course.selfgrade NOTEBOOK``.

For self-study, outside a class. It builds a throw-away nbgrader course from ``solutions/``,
generates the assignment, hands your notebook in as student ``me``, autogrades it (the hidden tests
are put back into the test cells, as they are for a graded course) and prints the points of every
question and test cell, with the one-line reason of each failure. It never shows the hidden tests'
code. Exits with 0 on full marks, 1 otherwise, 2 on a usage error.

Book: chapter "Exercises".
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

from .course import ASSIGNMENTS, REPO_ROOT
from .report import explain, first_line, last_error_line

STUDENT = "me"


def _questions(source_notebook):
    """``[(question label, [test cells])]`` from the source notebook: tests follow their answer."""
    import nbformat

    questions = []
    for cell in nbformat.read(source_notebook, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            questions.append((f"Q{len(questions) + 1} ({meta['grade_id'].removesuffix('_answer')})", []))
        elif meta.get("grade") and questions:
            questions[-1][1].append(meta["grade_id"])
    return questions


def _errors(autograded_notebook):
    """``{grade_id: one-line error}`` of the failing test cells of the autograded notebook."""
    import nbformat

    errors = {}
    for cell in nbformat.read(autograded_notebook, as_version=4).cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                errors[grade_id] = explain(f"{out.ename}: {out.evalue}")
            elif out.output_type == "stream" and out.name == "stderr" and grade_id not in errors:
                errors[grade_id] = "the cell wrote to stderr (a warning?), which nbgrader scores as a failure"
    return errors


def selfgrade(notebook, assignment):
    """Autograde ``notebook`` as ``assignment``; return ``(questions, scores, errors, test docstrings)``."""
    from .grading import grade

    import nbformat

    source = REPO_ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    with tempfile.TemporaryDirectory(prefix="mha_selfgrade_") as tmp:
        scores = grade({assignment: {STUDENT: str(notebook)}}, root=tmp)[assignment][STUDENT]
        errors = _errors(Path(tmp) / "autograded" / STUDENT / assignment / f"{assignment}.ipynb")
    docs = {c.metadata["nbgrader"]["grade_id"]: first_line(c.source)
            for c in nbformat.read(source, as_version=4).cells if c.metadata.get("nbgrader", {}).get("grade")}
    return _questions(source), scores, errors, docs


def _points(x):
    return f"{x:g}"


def print_report(questions, scores, errors, docs):
    """Print points per question and per test cell, with the reason of each loss; return the totals."""
    for label, tests in questions:
        print(f"{label}: {_points(sum(scores[t][0] for t in tests))} / {_points(sum(scores[t][1] for t in tests))}")
        for test in tests:
            score, max_score = scores[test]
            reason = f"  <- {errors.get(test, docs.get(test, ''))}" if score < max_score else ""
            print(f"    {test}: {_points(score)} / {_points(max_score)}{reason}")
    total, maximum = (sum(s[i] for s in scores.values()) for i in (0, 1))
    print(f"Total: {_points(total)} / {_points(maximum)}")
    return total, maximum


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mha_course.selfgrade", description=__doc__.splitlines()[0])
    parser.add_argument("notebook", help="your notebook, e.g. exercises/03_kv_cache/03_kv_cache.ipynb")
    parser.add_argument("--assignment", help="which assignment it answers (default: from the file name)")
    args = parser.parse_args(argv)
    notebook = Path(args.notebook)
    assignment = args.assignment or notebook.stem
    if not notebook.is_file():
        parser.error(f"no such notebook: {notebook}")
    if assignment not in ASSIGNMENTS:
        parser.error(f"cannot tell the assignment from {notebook.name!r}; pass --assignment, one of {', '.join(ASSIGNMENTS)}")
    print(f"Grading {notebook} as {assignment} (hidden tests included); this takes a few seconds ...", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's and SQLAlchemy's notices are not the learner's concern
        questions, scores, errors, docs = selfgrade(notebook, assignment)
    total, maximum = print_report(questions, scores, errors, docs)
    return 0 if total == maximum else 1


if __name__ == "__main__":
    sys.exit(main())
