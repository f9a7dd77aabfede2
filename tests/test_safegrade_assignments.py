"""safegrade on every assignment: honest grades as designed, in the sandbox, with the learner edition.

One safegrade run per assignment (all of them at once); a module-scoped fixture pays for them once.
The honest notebooks are the ones ``test_grading_scores_a/_b`` grade with ``nbgrader autograde``
against the same ``expected_scores``, so equal scores here mean equal to nbgrader's.
"""
from __future__ import annotations

import pytest

from grading_support import expected_scores
from mha_course.course import ASSIGNMENTS
from safegrade_multi import finish, honest, start
from safegrade_support import scores, write

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safegrade_all")
    runs = {}
    try:
        for assignment in ASSIGNMENTS:
            students = {name: nb for name, (nb, _) in honest(assignment).items()}
            folder = write(students, tmp / assignment / "submitted", assignment)
            runs[assignment] = start(assignment, folder, tmp / assignment / "out")
        return {a: finish(process, tmp / a / "out") for a, process in runs.items()}
    finally:
        for process in runs.values():
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_honest_grades_are_as_designed(graded, assignment):
    for student, (_, lost) in honest(assignment).items():
        result = graded[assignment][student]
        assert scores(result) == expected_scores(assignment, lost), student
        assert (result["status"], result["review"], result["flags"]) == ("ok", False, []), student
