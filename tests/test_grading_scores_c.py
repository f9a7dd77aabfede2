"""Autograde assignments 7-10 in a temporary course: full marks, zero, lost answers, wrong answers,
and answers that only call the reference they must write (graded with the learner edition).

One nbgrader subprocess grades every submission of this module (the ``scores`` fixture below
replaces the one of ``grading_support.score_tests`` to add the reference calls to the same batch).
"""
import re

import pytest

import grading_support as gs
from grading_support_v2 import ASSIGNMENTS_V2, REFERENCE_CALLS

globals().update(gs.score_tests(ASSIGNMENTS_V2))


def _reference_call(assignment):
    nb = gs.submission(assignment, {})
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in REFERENCE_CALLS[assignment]:
            cell.source = REFERENCE_CALLS[assignment][grade_id]
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    specs = gs.build_specs(ASSIGNMENTS_V2)
    for assignment in ASSIGNMENTS_V2:
        specs[assignment]["reference_call"] = _reference_call(assignment)
    return gs.grade_all(specs, tmp_path_factory.mktemp("grading"), with_errors=True)


@pytest.fixture(scope="module")
def scores(graded):  # noqa: F811 (replaces score_tests' fixture: one batch for every test here)
    return graded[0]


@pytest.mark.parametrize("assignment", ASSIGNMENTS_V2)
def test_an_answer_that_calls_the_reference_earns_nothing(graded, assignment):
    scores, errors = graded
    lost = {t for answer in REFERENCE_CALLS[assignment] for t in gs.lost_without(assignment, answer)}
    assert scores[assignment]["reference_call"] == gs.expected_scores(assignment, lost)
    for test in lost:
        assert f"is not available in {assignment}" in errors[assignment]["reference_call"][test], test


@pytest.mark.parametrize("assignment", ASSIGNMENTS_V2)
def test_every_answer_is_written_from_scratch(assignment):
    """The solutions (full marks above) call no mha_kit function beyond the allowed helpers."""
    from mha_course.course import BASE_HELPERS, COURSE

    allowed = set(BASE_HELPERS) | set(COURSE[assignment].helpers)
    for cell in gs.read("solutions", assignment).cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            used = set(re.findall(r"\bmk\.(\w+)", cell.source))
            assert used <= allowed, (cell.metadata["nbgrader"]["grade_id"], used - allowed)
