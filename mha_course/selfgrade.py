"""Grade your own notebook, hidden tests included: ``python -m mha_course.selfgrade NOTEBOOK``.

For self-study, outside a class. It builds a throw-away nbgrader course from ``solutions/``,
generates the assignment, hands your notebook in as student ``me``, autogrades it exactly as the
instructor's grading does (the hidden tests put back into the test cells, the kernel given the
assignment's learner edition of ``mha_kit``, the results judged outside it by
:mod:`mha_course.judge`), and prints the points of every
question and test cell, with the one-line reason of each failure. It never shows the hidden tests'
code. Several notebooks grade in one run. Exits with 0 on full marks, 1 otherwise, 2 on a usage error
(a missing file, a file that is not a notebook, an assignment it cannot tell).

Book: chapter "Exercises".
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

from .course import ASSIGNMENTS, REPO_ROOT
from .report import explain, first_line

STUDENT = "me"


def _questions(source_notebook):
    """``[(question label, [test cells])]`` from the source notebook: a question is a ``## Qn`` heading
    and the answers and tests under it (``Q5 (fixed_cache_bytes, q5_mistake)``)."""
    import nbformat

    questions, names = [], []
    for cell in nbformat.read(source_notebook, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and cell.source.startswith("## Q") or meta.get("solution") and not questions:
            questions.append([f"Q{len(questions) + 1}", []])
            names.append([])
        if meta.get("solution"):
            names[-1].append(meta["grade_id"].removesuffix("_answer"))
        elif meta.get("grade") and questions:
            questions[-1][1].append(meta["grade_id"])
    return [(f"{label} ({', '.join(n)})", tests) for (label, tests), n in zip(questions, names)]


def selfgrade(notebook, assignment):
    """Autograde ``notebook`` as ``assignment``; return ``(questions, scores, errors, test docstrings, notes)``
    (``notes``: the carried-forward line of a test graded with a correct earlier answer in place of yours)."""
    return selfgrade_many([(notebook, assignment)])[0]


def selfgrade_many(pairs):
    """:func:`selfgrade` of every ``(notebook, assignment)``, in one throw-away course (one nbgrader start)."""
    from .grading import cell_errors, cell_notes, grade

    import nbformat

    students = [f"{STUDENT}{i or ''}" for i in range(len(pairs))]
    spec = {}
    for student, (notebook, assignment) in zip(students, pairs):
        spec.setdefault(assignment, {})[student] = str(notebook)
    reports = []
    with tempfile.TemporaryDirectory(prefix="mha_selfgrade_") as tmp:
        graded = grade(spec, root=tmp)
        for student, (_, assignment) in zip(students, pairs):
            source = REPO_ROOT / "solutions" / assignment / f"{assignment}.ipynb"
            autograded = Path(tmp) / "autograded" / student / assignment / f"{assignment}.ipynb"
            errors = {gid: explain(error) for gid, error in cell_errors(autograded).items()}
            docs = {c.metadata["nbgrader"]["grade_id"]: first_line(c.source)
                    for c in nbformat.read(source, as_version=4).cells if c.metadata.get("nbgrader", {}).get("grade")}
            reports.append((_questions(source), graded[assignment][student], errors, docs, cell_notes(autograded)))
    return reports


def _points(x):
    return f"{x:g}"


def print_report(questions, scores, errors, docs, notes=None):
    """Print points per question and per test cell, with the reason of each loss (and the note of a test
    graded with a correct earlier answer in place of yours); return the totals."""
    notes = notes or {}
    for label, tests in questions:
        print(f"{label}: {_points(sum(scores[t][0] for t in tests))} / {_points(sum(scores[t][1] for t in tests))}")
        for test in tests:
            score, max_score = scores[test]
            reason = f"  <- {errors.get(test, docs.get(test, ''))}" if score < max_score else ""
            reason = f"  ({notes[test]})" if not reason and test in notes else reason
            print(f"    {test}: {_points(score)} / {_points(max_score)}{reason}")
    total, maximum = (sum(s[i] for s in scores.values()) for i in (0, 1))
    print(f"Total: {_points(total)} / {_points(maximum)}")
    return total, maximum


def _grade_ids(notebook):
    import nbformat

    cells = nbformat.read(notebook, as_version=4).cells
    return {c.metadata.get("nbgrader", {}).get("grade_id") for c in cells} - {None}


def assignment_of(notebook):
    """The assignment a notebook answers: its file name, or else the grade ids of its cells.

    So JupyterLab's copies (``01_shapes-Copy1.ipynb``, ``01_shapes (1).ipynb``) grade as
    ``01_shapes``. ``None`` when no assignment's cells are in it. Raises ``ValueError`` with one
    line when the file is not a notebook.
    """
    notebook = Path(notebook)
    try:
        ids = _grade_ids(notebook)
    except Exception as error:  # nbformat raises JSON, validation and Unicode errors alike
        raise ValueError(f"{notebook} is not a readable notebook ({type(error).__name__})") from None
    if notebook.stem in ASSIGNMENTS:
        return notebook.stem
    overlap = {a: len(ids & _grade_ids(REPO_ROOT / "solutions" / a / f"{a}.ipynb")) for a in ASSIGNMENTS}
    best = max(overlap, key=overlap.get)
    return best if overlap[best] else None


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's and SQLAlchemy's notices are not the learner's concern
        reports = selfgrade_many(pairs)
    full = True
    for (notebook, _), report in zip(pairs, reports):
        if len(pairs) > 1:
            print(f"== {notebook}")
        total, maximum = print_report(*report)
        full = full and total == maximum
    return 0 if full else 1


if __name__ == "__main__":
    sys.exit(main())
