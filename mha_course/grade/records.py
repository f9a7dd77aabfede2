"""What safegrade leaves: reports, ``grades.csv``, and the instructor's course as ``nbgrader autograde`` leaves it.

* A result (``results/<student>.json`` and ``autograded/<student>/``, written by :mod:`mha_course.grade.pool`)
  is the record of truth: a :class:`~mha_course.grade.pipeline.Result` and what the submission was;
  reports, ``grades.csv`` and the course can be rebuilt from the results alone
  (``python -m mha_course.safegrade ... --merge-only``).
* :func:`write_reports`: ``reports/<student>.txt`` (points per question and per test cell, the
  reason of each loss, the flags) and ``grades.csv``.
* :class:`CourseWriter`: safegrade grades in throw-away courses; this puts each result into the
  instructor's course as ``nbgrader autograde`` would have (``submitted/``, ``autograded/``, and the
  gradebook written by nbgrader's own ``SaveAutoGrades`` and :func:`~mha_course.plugins.flags.mark_flags`).
"""
from __future__ import annotations

import csv
import json
import shutil
import tempfile
import warnings
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades
from nbgrader.utils import parse_utc

from ..notebook import one_line
from ..plugins.api import prepare_environment
from ..plugins.flags import mark_flags
from .pipeline import Result, template


def read_results(out):
    """Every result under ``out/results``, in student order (the JSON data)."""
    return [json.loads(p.read_text()) for p in sorted((Path(out) / "results").glob("*.json"))]


def report_text(data):
    """One submission's report, for a person: points per question and test cell, why each was lost, the flags."""
    result = Result.from_dict(data)
    lines = [f"student: {data['student']}   assignment: {result.assignment}   "
             f"file: {one_line(repr(data.get('source') or data['file']))}",
             f"score: {result.total:g} / {result.max_total:g}   status: {result.status}   "
             f"isolation: {data['isolation']}", "", *result.lines()]
    flags = [f"  [{severity}] {one_line(text)}" for severity, text in result.flags]
    lines += ["", "flags:", *flags] if flags else ["", "flags: none"]
    return "\n".join(lines) + "\n"


def write_reports(out, assignment):
    """``reports/<student>.txt`` and ``grades.csv`` from every result; returns the results."""
    out = Path(out)
    results = read_results(out)
    (out / "reports").mkdir(exist_ok=True)
    for result in results:
        (out / "reports" / f"{result['student']}.txt").write_text(report_text(result))
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student_id", "assignment", "score", "max_score", "status", "isolation", "lms_id", "flags"])
        for r in results:
            writer.writerow([r["student"], assignment, r.get("total", 0), r.get("max_total", 0), r["status"],
                             r["isolation"], r.get("lms_id", ""), one_line(" | ".join(text for _, text in r["flags"]))])
    return results


def _cells(url, assignment):
    """``(has submissions, grade cells, solution cells, task cells, source cells)`` of the assignment's notebook in
    the gradebook at ``url`` (names, as sets), or ``None`` when it has none."""
    with warnings.catch_warnings(), Gradebook(url) as gradebook:
        warnings.simplefilter("ignore")  # SQLAlchemy notices from inside nbgrader
        try:
            notebook = gradebook.find_notebook(assignment, assignment)
        except MissingEntry:
            return None
        return (bool(notebook.submissions), *({cell.name for cell in cells} for cells in (
            notebook.grade_cells, notebook.solution_cells, notebook.task_cells, notebook.source_cells)))


class CourseWriter:
    """Puts safegrade's results into a course as ``nbgrader autograde`` would leave them, one at a time.

    For each result: the submitted file under ``submitted/<student>/<assignment>/``, the autograded
    notebook under ``autograded/<student>/<assignment>/``, and the gradebook rows written by
    nbgrader's own ``SaveAutoGrades``, ``AssignLatePenalties`` and :class:`RecordFlags`. The only
    writer of the instructor's gradebook (workers grade in throw-away courses); results are
    recorded as they arrive, so the database's waits overlap the grading.
    """

    def __init__(self, course, assignment, out):
        self.assignment, self.course, self.out = assignment, Path(course).resolve(), Path(out)
        self.url, self.recorded, self._ready = f"sqlite:///{self.course / 'gradebook.db'}", set(), False

    def _open(self):
        prepare_environment()
        self.course.mkdir(parents=True, exist_ok=True)
        self._add_assignment()
        self.gradebook, self._ready = Gradebook(self.url), True

    def _add_assignment(self):
        """The assignment and its cells go in as ``generate_assignment`` puts them, whole.

        A batch killed while adding them leaves a part (the grade cells, not yet the solution cells: recording
        then fails with "No such taskcomment"). So the cells are compared with a fresh release's, and a notebook
        that lacks some is added again: nbgrader's ``SaveCells`` replaces it whole, as no submission is
        recorded against it yet (a notebook with submissions was complete when they were recorded).
        """
        with tempfile.TemporaryDirectory(prefix="mha_sg_db_") as tmp:
            whole = _cells(f"sqlite:///{template(self.assignment, Path(tmp) / 'release').root / 'gradebook.db'}",
                           self.assignment)
            here = _cells(self.url, self.assignment)
            if here is not None and (here[0] or here[1:] == whole[1:]):
                return
            template(self.assignment, Path(tmp) / "course", gradebook=self.url)

    def record(self, result):
        """Put ``result`` into the course (replacing any earlier autograde of the same student)."""
        if not self._ready:  # opened with the first result, while the workers grade
            self._open()
        student, graded = result["student"], self.out / "autograded" / result["student"] / f"{self.assignment}.ipynb"
        submitted = self._folder("submitted", student)
        source = Path(result.get("file") or "")
        if source.is_file() and not source.is_symlink() and source.resolve() != (submitted / graded.name).resolve():
            shutil.copyfile(source, submitted / graded.name)
        autograded = self._folder("autograded", student)
        if graded.is_file():
            shutil.copyfile(graded, autograded / graded.name)
        self._gradebook(student, nbformat.read(graded, as_version=4) if graded.is_file() else None, result)
        self.recorded.add(student)

    def reflag(self, result):
        """Write only ``result``'s flags into the gradebook (the similarity pass ran after it was recorded)."""
        if not self._ready:
            self._open()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy notices from inside nbgrader
            mark_flags(self.gradebook, self.assignment, self.assignment, result["student"], result["flags"])

    def _folder(self, kind, student):
        folder = self.course / kind / student / self.assignment
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _gradebook(self, student, notebook, result):
        """The rows ``nbgrader autograde`` writes, by nbgrader's own steps, in one transaction."""
        gradebook, timestamp = self.gradebook, self._timestamp(student)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy notices from inside nbgrader
            gradebook.update_or_create_student(student)
            gradebook.update_or_create_submission(self.assignment, student, timestamp=timestamp)
            if notebook is not None:  # SaveAutoGrades' own cell steps, on this open gradebook
                save, commit = SaveAutoGrades(), gradebook.db.commit
                save.notebook_id = save.assignment_id = self.assignment
                save.student_id, save.gradebook = student, gradebook
                gradebook.db.commit = gradebook.db.flush  # one commit (one disk sync) per student, below
                try:
                    for index, cell in enumerate(notebook.cells):
                        save.preprocess_cell(cell, {}, index)
                finally:
                    gradebook.db.commit = commit
            else:  # only the result (a grader error, or shards merged without autograded/)
                for grade in gradebook.find_submission_notebook(self.assignment, self.assignment, student).grades:
                    grade.auto_score = result.get("scores", {}).get(grade.cell.name, [0])[0]
            mark_flags(gradebook, self.assignment, self.assignment, student, result["flags"])
        if timestamp is not None and notebook is not None:  # a late penalty needs a submission time
            resources = {"nbgrader": {"student": student, "assignment": self.assignment,
                                      "notebook": self.assignment, "db_url": self.url}}
            AssignLatePenalties().preprocess(notebook, resources)

    def _timestamp(self, student):
        """The submission's ``timestamp.txt`` (nbgrader's), copied next to the autograded notebook too."""
        stamp = self.course / "submitted" / student / self.assignment / "timestamp.txt"
        if not stamp.is_file():
            return None
        shutil.copyfile(stamp, self._folder("autograded", student) / stamp.name)
        return parse_utc(stamp.read_text().strip())

    def close(self):
        if self._ready:
            self.gradebook.close()
            self._ready = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
