"""A submission is rebuilt on the release once per grading, by the pipeline or by nbgrader's plug-in, never both.

``pipeline.grade`` reads the file outside any kernel and rebuilds it on the release before nbgrader
sees it (``submit``); ``nbgrader autograde`` alone rebuilds with ``RebuildOnRelease``. Both count
their rebuilds here through the one function every rebuild assembles its notebook with.
"""
from __future__ import annotations

import nbformat
import pytest

import grading_support as gs
import mha_course.plugins.rebuild as rebuild_module
from mha_course.grade.pipeline import grade, quiet, template
from mha_course.course import ASSIGNMENTS
from mha_course.plugins.api import course_api

A = ASSIGNMENTS[0]


@pytest.fixture
def rebuilds(monkeypatch):
    """The number of rebuilds so far: every call of the rebuild's assembly step, wherever it comes from."""
    count, assemble = [], rebuild_module._assemble

    def counted(*args, **kwargs):
        count.append(1)
        return assemble(*args, **kwargs)

    monkeypatch.setattr(rebuild_module, "_assemble", counted)
    return count


def test_the_pipeline_rebuilds_each_submission_once(tmp_path, rebuilds):
    course = template(A, tmp_path / "course")
    notebooks = {}
    for student, changes in (("ann", {}), ("bob", {})):
        path = tmp_path / f"{student}.ipynb"
        nbformat.write(gs.submission(A, changes), path)
        notebooks[student] = path
    results = grade(course, notebooks)
    assert len(rebuilds) == 2, f"{len(rebuilds)} rebuilds of 2 submissions"
    assert {s: r.total for s, r in results.items()} == {"ann": results["ann"].max_total, "bob": results["bob"].max_total}


def test_nbgrader_autograde_alone_still_rebuilds_with_its_plugin(tmp_path, rebuilds):
    """The course's own nbgrader run (formgrader's button, ``nbgrader autograde``) keeps its rebuild: the
    pipeline switches the plug-in off only where it rebuilt the notebook itself."""
    course = template(A, tmp_path / "course")
    target = course.submitted("cheater")
    target.parent.mkdir(parents=True)
    nbformat.write(gs.submission(A, {}), target)
    with quiet():  # nbgrader's notices about a student it meets for the first time
        step = course_api(course.root).autograde(A, "cheater", force=True)
    assert step["success"], step.get("log", "")[-2000:]
    assert len(rebuilds) == 1
