"""safegrade's writer of the instructor's gradebook (mha_course.grade.records.CourseWriter) after a killed batch.

A batch killed while it added the assignment to the gradebook left a part of it (grade cells, no solution cells);
the next run found grade cells, took the notebook for whole, and every result then failed to record ("No such
taskcomment: 01_shapes/01_shapes/head_dim_answer"; tests/test_safegrade_resume.py on a loaded machine,
2026-12-06). The writer now compares the notebook's cells with a fresh release's and adds a part again.
"""
import warnings

from nbgrader.api import Gradebook

from mha_course.grade.pipeline import template
from mha_course.grade.records import CourseWriter, _cells

A = "01_shapes"


def test_a_part_of_the_assignment_left_by_a_killed_batch_is_added_again(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    url = f"sqlite:///{course / 'gradebook.db'}"
    template(A, tmp_path / "first", gradebook=url)
    whole = _cells(url, A)
    assert whole[1] and whole[2], whole  # grade cells and solution cells
    with warnings.catch_warnings(), Gradebook(url) as gradebook:  # as the kill left it: no solution cells yet
        warnings.simplefilter("ignore")
        for cell in list(gradebook.find_notebook(A, A).solution_cells):
            gradebook.db.delete(cell)
        gradebook.db.commit()
    assert _cells(url, A)[2] == set()
    CourseWriter(course, A, tmp_path / "out")._open()
    assert _cells(url, A) == whole


def test_a_whole_assignment_is_left_as_it_is(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    url = f"sqlite:///{course / 'gradebook.db'}"
    template(A, tmp_path / "first", gradebook=url)
    stamp = (course / "gradebook.db").stat().st_mtime_ns
    CourseWriter(course, A, tmp_path / "out")._open()
    assert (course / "gradebook.db").stat().st_mtime_ns == stamp  # nothing written: the notebook was whole
