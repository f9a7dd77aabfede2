"""What safegrade writes from the per-student results: reports, ``grades.csv`` and the gradebook.

A result (``results/<student>.json``, written by :mod:`.worker`) is the record of truth; everything
here can be rebuilt from the results alone (``python -m mha_course.safegrade ... --merge-only``).
"""
from __future__ import annotations

import csv
import json
import shutil
import tempfile
import warnings
from pathlib import Path

from ..course import REPO_ROOT, course_api, prepare_environment, run_step


def read_results(out):
    """Every result under ``out/results``, in student order."""
    return [json.loads(p.read_text()) for p in sorted((Path(out) / "results").glob("*.json"))]


def report_text(result, assignment):
    """One submission's report, for a person: score per question, why a question lost, flags."""
    r = result
    lines = [f"student: {r['student']}   assignment: {assignment}   file: {r['file']}",
             f"score: {r.get('total', 0):g} / {r.get('max_total', 0):g}   status: {r['status']}   "
             f"isolation: {r['isolation']}", "", "question scores:"]
    for grade_id, (score, max_score) in r.get("scores", {}).items():
        why = r.get("errors", {}).get(grade_id, "")
        lines.append(f"  {grade_id:<40} {score:g} / {max_score:g}  {why}")
    flags = [f"  [{severity}] {text}" for severity, text in r["flags"]]
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
        writer.writerow(["student", "score", "max_score", "status", "isolation", "flags"])
        for r in results:
            writer.writerow([r["student"], r.get("total", 0), r.get("max_total", 0), r["status"], r["isolation"],
                             " | ".join(text for _, text in r["flags"])])
    return results


class GradebookWriter:
    """Puts results into a course's ``gradebook.db`` through nbgrader's Gradebook API, one at a time.

    The only writer of the instructor's gradebook (workers grade in throw-away courses). It records
    each result as it arrives, so that the database's waits overlap the grading; recording a
    student again replaces their earlier submission. A submission flagged for review is marked
    *flagged* and its cells *needs manual grade*, so formgrader lists it.
    """

    def __init__(self, course, assignment):
        self.assignment, self.url = assignment, f"sqlite:///{Path(course).resolve() / 'gradebook.db'}"
        self.course, self.gradebook, self.recorded = Path(course), None, set()

    def _open(self):
        from nbgrader.api import Gradebook

        prepare_environment()
        self.course.mkdir(parents=True, exist_ok=True)
        self._add_assignment()
        self.gradebook = Gradebook(self.url)

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
        """Write ``result``'s scores (replacing any earlier submission of the same student)."""
        from nbgrader.api import MissingEntry

        if self.gradebook is None:  # opened with the first result, while the workers grade
            self._open()
        gradebook, student = self.gradebook, result["student"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy notices from inside nbgrader's add_submission
            gradebook.update_or_create_student(student)
            try:
                gradebook.remove_submission(self.assignment, student)
            except MissingEntry:
                pass
            gradebook.add_submission(self.assignment, student)
            notebook = gradebook.find_submission_notebook(self.assignment, self.assignment, student)
            notebook.flagged = bool(result["review"])
            for grade in notebook.grades:
                if grade.cell.name in result.get("scores", {}):
                    grade.auto_score = result["scores"][grade.cell.name][0]
                    grade.needs_manual_grade = bool(result["review"])
                elif grade.auto_score is None and grade.max_score_gradecell:
                    grade.auto_score, grade.needs_manual_grade = 0.0, True
            gradebook.db.commit()
        self.recorded.add(student)

    def close(self):
        if self.gradebook is not None:
            self.gradebook.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def merge_gradebook(course, assignment, results):
    """Write every result into ``course``'s gradebook."""
    with GradebookWriter(course, assignment) as writer:
        for result in results:
            writer.record(result)
