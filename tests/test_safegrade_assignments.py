"""safegrade on every assignment: honest grades as designed, one attack each earns nothing.

One safegrade run per assignment (the six run at once); a module-scoped fixture pays for them once.
The honest notebooks are the ones ``test_grading_scores_a/_b`` grade with plain nbgrader against
the same ``expected_scores``, so equal scores here mean equal to plain nbgrader's (compared
directly, in one batch with the attacks, for exercise 01 in ``test_safegrade``).
"""
from __future__ import annotations

import pytest

from grading_support import expected_scores
from mha_course.course import ASSIGNMENTS
from safegrade_multi import HOSTILE, finish, honest, hostile, start, touched_by
from safegrade_support import scores, write

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safegrade_all")
    runs = {}
    try:
        for assignment in ASSIGNMENTS:
            students = {name: nb for name, (nb, _) in honest(assignment).items()}
            folder = write({**students, "hostile": hostile(assignment)}, tmp / assignment / "submitted", assignment)
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


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_attack_earns_nothing_from_its_answer_on_and_is_flagged(graded, assignment):
    answer, _, _, words = HOSTILE[assignment]
    touched = touched_by(assignment, answer)
    result = graded[assignment]["hostile"]
    assert scores(result) == expected_scores(assignment, touched), result["flags"]
    assert result["review"] is True and result["status"] == "review", result["flags"]
    for test in touched:
        texts = [text for severity, text in result["flags"]
                 if severity == "review" and text.startswith(f"tampering around {test}:")]
        assert len(texts) == 1 and words in texts[0], (test, result["flags"])
