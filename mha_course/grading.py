"""Autograde notebooks in a throw-away nbgrader course and return a score per test cell.

Used by ``python -m mha_course.selfgrade`` and by the tests. As a command it reads a JSON spec and
writes the scores as JSON, so that many submissions are graded by one Python process::

    python -m mha_course.grading SPEC.json OUT.json [--root=DIR] [Section.name=VALUE ...]

where ``SPEC.json`` is ``{"01_shapes": {"alice": "path/to/01_shapes.ipynb", ...}, ...}`` and
``OUT.json`` becomes ``{"01_shapes": {"alice": {"<grade_id>": [score, max_score], ...}}}`` and
``OUT.errors.json`` ``{"01_shapes": {"alice": {"<grade_id>": "AssertionError: ...", ...}}}``.
Trailing ``Section.name=VALUE`` pairs override the course's configuration (``Execute.timeout=5``;
values are read as Python literals); ``--root=DIR`` grades in the course folder ``DIR`` and keeps it
(its ``autograded/<student>/<assignment>/``), instead of a temporary one.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .course import REPO_ROOT, course_api, run_step


def scores_of(api, assignment, student):
    """``{grade_id: (score, max_score)}`` of the autograded test cells, in notebook order."""
    from nbgrader.api import Gradebook

    with Gradebook(api.coursedir.db_url) as gradebook:
        notebook = gradebook.find_submission_notebook(assignment, assignment, student)
        grades = [(g.cell.name, float(g.score), float(g.max_score)) for g in notebook.grades]
    order = {name: i for i, name in enumerate(_grade_ids(api, assignment))}
    return {name: (score, max_score) for name, score, max_score in sorted(grades, key=lambda g: order.get(g[0], 0))}


def _grade_ids(api, assignment):
    import nbformat

    path = Path(api.coursedir.root) / api.coursedir.source_directory / assignment / f"{assignment}.ipynb"
    cells = nbformat.read(path, as_version=4).cells
    return [c.metadata["nbgrader"]["grade_id"] for c in cells if c.metadata.get("nbgrader", {}).get("grade")]


def use_learner_edition(assignment, root):
    """Make the kernels nbgrader starts from now on see the learner edition of ``assignment``.

    Builds it under ``root/.learner/<assignment>`` and writes a ``python3`` kernelspec whose
    ``env`` puts it first on ``PYTHONPATH``, in ``root/.jupyter`` placed first on ``JUPYTER_PATH``
    (the grading process itself keeps the real ``mha_kit``). Without a sandbox the real package
    stays readable through the file system; the sandbox of ``mha_course.safegrade`` hides it.
    """
    from .learner_edition import build

    edition = build(assignment, Path(root) / ".learner" / assignment)
    spec_dir = Path(root) / ".jupyter" / "kernels" / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (learner edition)", "language": "python",
            "env": {"PYTHONPATH": str(edition.resolve()), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}}
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    jupyter = str((Path(root) / ".jupyter").resolve())
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p and p != jupyter]
    os.environ["JUPYTER_PATH"] = os.pathsep.join([jupyter, *paths])
    return edition


def cell_errors(autograded_notebook):
    """``{grade_id: "Ename: evalue"}`` of the failing graded cells of an autograded notebook.

    The first error output of a cell (the judge puts its verdict first), or a note when the cell
    wrote to stderr, which nbgrader scores as a failure too.
    """
    import nbformat

    errors = {}
    for cell in nbformat.read(autograded_notebook, as_version=4).cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        for out in cell.get("outputs", []):
            if out.output_type == "error" and grade_id not in errors:
                errors[grade_id] = f"{out.ename}: {out.evalue}"
        if grade_id not in errors and any(o.output_type == "stream" and o.name == "stderr" for o in cell.get("outputs", [])):
            errors[grade_id] = "the cell wrote to stderr (a warning?), which nbgrader scores as a failure"
    return errors


def cell_notes(autograded_notebook):
    """``{grade_id: line}`` of the test cells graded with an earlier answer replaced (error carried forward)."""
    import nbformat

    from .judge.carry import NOTE_START

    notes = {}
    for cell in nbformat.read(autograded_notebook, as_version=4).cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and str(out.get("text", "")).startswith(NOTE_START):
                notes[cell.metadata.get("nbgrader", {}).get("grade_id")] = out.text.strip()
    return notes


def grade(submissions, root=None, solutions=REPO_ROOT / "solutions", overrides=None, learner_edition=True,
          errors=None):
    """Autograde ``{assignment: {student: notebook_path}}``; return ``{assignment: {student: scores}}``.

    ``root`` is the course folder to use (a temporary one by default, deleted afterwards);
    ``overrides`` are passed to :func:`mha_course.course.course_config`. With ``learner_edition``
    (the default) the kernels see the assignment's learner edition of ``mha_kit``
    (:func:`use_learner_edition`), as the instructor's grading does. A dict passed as ``errors``
    receives ``{assignment: {student: {grade_id: "Ename: evalue"}}}`` (:func:`cell_errors`).
    """
    if root is None:
        with tempfile.TemporaryDirectory(prefix="mha_grade_") as tmp:
            return grade(submissions, tmp, solutions, overrides, learner_edition, errors)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    results = {}
    api = course_api(root, **(overrides or {}))
    for assignment, students in submissions.items():
        shutil.copytree(Path(solutions) / assignment, root / "solutions" / assignment, dirs_exist_ok=True)
        run_step(api.generate_assignment(assignment, force=True), f"generate_assignment {assignment}")
        if learner_edition:
            use_learner_edition(assignment, root)
        results[assignment] = {}
        for student, notebook in students.items():
            target = root / "submitted" / student / assignment
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(notebook, target / f"{assignment}.ipynb")
            run_step(api.autograde(assignment, student, force=True), f"autograde {assignment} for {student}")
            results[assignment][student] = scores_of(api, assignment, student)
            if errors is not None:
                graded = root / "autograded" / student / assignment / f"{assignment}.ipynb"
                errors.setdefault(assignment, {})[student] = cell_errors(graded)
    return results


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    roots = [arg.removeprefix("--root=") for arg in argv[2:] if arg.startswith("--root=")]
    pairs = [arg for arg in argv[2:] if not arg.startswith("--root=")]
    if len(argv) < 2 or len(roots) > 1 or not all("=" in arg for arg in pairs):
        print(__doc__, file=sys.stderr)
        return 2
    overrides = {key: ast.literal_eval(value) for key, value in (arg.split("=", 1) for arg in pairs)}
    spec, errors = json.loads(Path(argv[0]).read_text()), {}
    scores = grade(spec, root=roots[0] if roots else None, overrides=overrides, errors=errors)
    Path(argv[1]).write_text(json.dumps(scores, indent=1))
    Path(argv[1]).with_suffix(".errors.json").write_text(json.dumps(errors, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
