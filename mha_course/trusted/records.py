"""What grading leaves: flags in nbgrader's gradebook, and safegrade's reports, ``grades.csv`` and course.

* :class:`RecordFlags`, the last of ``Autograde.autograde_preprocessors`` (``nbgrader_config.py``):
  a submission with a flag of severity ``review`` is marked *flagged*, its grades *needs manual
  grade*, and the reasons go into the auto comment of its first answer cell, so formgrader shows
  them. ``nbgrader autograde``, formgrader's Autograde button and safegrade all end with it.
* :class:`CourseWriter`: safegrade grades in throw-away courses; this puts each result into the
  instructor's course as ``nbgrader autograde`` would have (``submitted/``, ``autograded/``, and the
  gradebook written by nbgrader's own ``SaveAutoGrades`` and :class:`RecordFlags`).
* A result (``results/<student>.json`` and ``autograded/<student>/``, written by :mod:`.worker`) is
  the record of truth; reports, ``grades.csv`` and the course can be rebuilt from the results alone
  (``python -m mha_course.safegrade ... --merge-only``).
"""
from __future__ import annotations

import csv
import json
import shutil
import tempfile
import warnings
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from ..course import REPO_ROOT, course_api, prepare_environment, run_step
from .execute import flags_of


def read_results(out):
    """Every result under ``out/results``, in student order."""
    return [json.loads(p.read_text()) for p in sorted((Path(out) / "results").glob("*.json"))]


def report_text(result, assignment):
    """One submission's report, for a person: score per question, why a question lost, flags."""
    r = result
    lines = [f"student: {r['student']}   assignment: {assignment}   file: {one_line(repr(r.get('source') or r['file']))}",
             f"score: {r.get('total', 0):g} / {r.get('max_total', 0):g}   status: {r['status']}   "
             f"isolation: {r['isolation']}", "", "question scores:"]
    for grade_id, (score, max_score) in r.get("scores", {}).items():
        why = one_line(r.get("errors", {}).get(grade_id, ""), 200)
        lines.append(f"  {grade_id:<40} {score:g} / {max_score:g}  {why}")
    flags = [f"  [{severity}] {one_line(text)}" for severity, text in r["flags"]]
    lines += ["", "flags:", *flags] if flags else ["", "flags: none"]
    return "\n".join(lines) + "\n"


def write_reports(out, assignment):
    """``reports/<student>.txt`` and ``grades.csv`` from every result; returns the results."""
    out = Path(out)
    results = read_results(out)
    (out / "reports").mkdir(exist_ok=True)
    for result in results:
        (out / "reports" / f"{result['student']}.txt").write_text(report_text(result, assignment))
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student_id", "assignment", "score", "max_score", "status", "isolation", "lms_id", "flags"])
        for r in results:
            writer.writerow([r["student"], assignment, r.get("total", 0), r.get("max_total", 0), r["status"],
                             r["isolation"], r.get("lms_id", ""), one_line(" | ".join(text for _, text in r["flags"]))])
    return results


def one_line(text, limit=500):
    """``text`` on one line (a newline in a file name cannot start a row of a report), cut to ``limit``."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class RecordFlags(NbGraderPreprocessor):
    """After ``SaveAutoGrades``: write the notebook's flags (see :func:`~.execute.flags_of`) into the gradebook."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            mark_flags(gradebook, info["assignment"], info["notebook"], info["student"], flags_of(nb))
        return nb, resources


def mark_flags(gradebook, assignment, notebook, student, flags):
    """Mark one submitted notebook flagged (needs manual grade, reasons in a comment) when ``flags`` ask for review."""
    review = [text for severity, text in flags if severity == "review"]
    submitted = gradebook.find_submission_notebook(notebook, assignment, student)
    submitted.flagged = bool(review)
    if review:
        for grade in submitted.grades:
            grade.needs_manual_grade = True
        comments = sorted(submitted.comments, key=lambda c: c.cell.name)
        first = next((c for c in comments if c.cell.name == _first_answer(gradebook, notebook, assignment)), None)
        if first or comments:
            (first or comments[0]).auto_comment = "Flagged for review: " + " | ".join(one_line(t) for t in review)
    gradebook.db.commit()


def _first_answer(gradebook, notebook, assignment):
    cells = gradebook.find_notebook(notebook, assignment).solution_cells
    return min(cells, key=lambda c: c.id).name if cells else None


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
        from nbgrader.api import Gradebook

        prepare_environment()
        self.course.mkdir(parents=True, exist_ok=True)
        self._add_assignment()
        self.gradebook, self._ready = Gradebook(self.url), True

    def _add_assignment(self):
        """The assignment and its cells go in as ``generate_assignment`` puts them, once."""
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.url) as gradebook:  # whole: a batch killed while adding it left only a part
            try:
                if gradebook.find_notebook(self.assignment, self.assignment).grade_cells:
                    return
            except MissingEntry:
                pass
        with tempfile.TemporaryDirectory(prefix="mha_sg_db_") as tmp:
            shutil.copytree(REPO_ROOT / "solutions" / self.assignment, Path(tmp) / "solutions" / self.assignment)
            api = course_api(tmp, **{"CourseDirectory.db_url": self.url, "CourseDirectory.release_directory": "release"})
            run_step(api.generate_assignment(self.assignment, force=True), f"generate_assignment {self.assignment}")

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

    def _folder(self, kind, student):
        folder = self.course / kind / student / self.assignment
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _gradebook(self, student, notebook, result):
        """The rows ``nbgrader autograde`` writes, by nbgrader's own steps, in one transaction."""
        from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

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
        from nbgrader.utils import parse_utc

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
