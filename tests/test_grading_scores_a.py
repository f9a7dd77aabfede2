"""Autograde assignments 1-3 in a temporary course: full marks, zero, lost answers, wrong answers.

The grading of the two halves of the course lives in two modules (``_a``, ``_b``) so that
pytest-xdist's ``--dist loadfile`` can grade them on two workers at once. Each module grades all
its submissions in one subprocess (a module-scoped fixture): nbgrader's start-up is paid once.
"""
import pytest

import grading_support as gs

ASSIGNMENTS = ("01_shapes", "02_params_compute", "03_kv_cache")
REMOVALS = [(a, answer) for a in ASSIGNMENTS for answer in gs.answer_ids(a)]
WRONG = [(a, w[0]) for a in ASSIGNMENTS for w in gs.WRONG_ANSWERS[a]]


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    return gs.grade_all(gs.build_specs(ASSIGNMENTS), tmp_path_factory.mktemp("grading"))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_scores_full_marks(scores, assignment):
    assert scores[assignment]["solution"] == gs.expected_scores(assignment, lost=())


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_release_scores_zero(scores, assignment):
    assert scores[assignment]["release"] == gs.expected_scores(assignment, lost=gs.points_of_tests(assignment))


@pytest.mark.parametrize("assignment, answer", REMOVALS)
def test_removing_one_answer_loses_only_its_points(scores, assignment, answer):
    lost = gs.tests_of_answer(assignment)[answer]
    assert lost, f"answer {answer} has no test cell"
    assert scores[assignment][f"no_{answer}"] == gs.expected_scores(assignment, lost)


@pytest.mark.parametrize("assignment, name", WRONG)
def test_wrong_answer_scores_as_designed(scores, assignment, name):
    (lost,) = [w[4] for w in gs.WRONG_ANSWERS[assignment] if w[0] == name]
    assert scores[assignment][f"wrong_{name}"] == gs.expected_scores(assignment, lost)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_at_least_three_wrong_answers(assignment):
    assert len(gs.WRONG_ANSWERS[assignment]) >= 3
