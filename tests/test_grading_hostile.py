"""Answers written against the grader earn nothing; honest answers written any way earn everything.

Graded as the instructor grades, through the one pipeline: nbgrader's autograde with the judge
(``JudgeCells``) and each assignment's graded kit of ``mha_kit`` in the kernel. A
hostile answer loses exactly the points of the questions it touches, and no more: a question
built on it is graded with a correct one in its place (error carried forward); a result that is
not plain data, or a reference that is not available, is named in the failing cell's error. Honest variants
(helper classes, namedtuples, type hints, prints, figures, ``from mha_kit import plots``,
``math.prod``, custom exceptions, extra cells, an answer that makes numpy warn) score full marks
with no error anywhere and nothing flagged; a warning is a note of its test, never a loss.

The attacks and the honest variants are an assignment's own (``HOSTILE`` and ``HONEST`` in its
``solutions/<assignment>/grading_answers.py``; see ``grading_support.designed``).
"""
import nbformat
import pytest

import grading_support as gs


def _changed(assignment, sources, extra=None):
    """The complete submission with whole answer cells replaced, and an extra cell after ``extra``'s answer."""
    nb = gs.submission(assignment, {})
    for cell in list(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in sources:
            cell.source = sources[grade_id]
        if extra and grade_id == extra[0]:
            nb.cells.insert(nb.cells.index(cell) + 1, nbformat.v4.new_code_cell(extra[1]))
    return nb


HOSTILE, HONEST = gs.HOSTILE, gs.HONEST  # from each assignment's solutions/<a>/grading_answers.py


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    specs = {}
    for assignment, name, sources, *_ in HOSTILE:
        specs.setdefault(assignment, {})[name] = _changed(assignment, sources)
    for assignment, name, sources, extra in HONEST:
        specs.setdefault(assignment, {})[name] = _changed(assignment, sources, extra)
    return gs.grade_all(specs, tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("assignment, name, answers, reason", [(a, n, lost, r) for a, n, _, lost, r in HOSTILE],
                         ids=[h[1] for h in HOSTILE])
def test_a_hostile_answer_earns_nothing_for_what_it_touched(graded, assignment, name, answers, reason):
    result = graded[assignment][name]
    lost = {t for answer in answers for t in gs.lost_without(assignment, answer)}
    assert gs.scores(result) == gs.expected_scores(assignment, lost)
    if reason:
        assert any(reason in result.reasons.get(t, "") for t in lost), result.reasons


@pytest.mark.parametrize("assignment, name", [(a, n) for a, n, *_ in HONEST], ids=[h[1] for h in HONEST])
def test_an_honest_answer_written_any_way_scores_full(graded, assignment, name):
    result = graded[assignment][name]
    assert gs.scores(result) == gs.expected_scores(assignment, lost=())
    assert (result.reasons, result.status) == ({}, "ok")


def test_a_warning_of_an_honest_answer_is_a_note_never_a_loss(graded):
    """attention answered with ``scores + np.log(mask)``: numpy warns "divide by zero encountered in log"."""
    (assignment,) = [a for a, name, *_ in HONEST if name == "log_mask_warns"]
    result = graded[assignment]["log_mask_warns"]
    assert "RuntimeWarning: divide by zero encountered in log" in result.notes["attention_causal"]
    assert result.scores["attention_causal"] == (2.0, 2.0)
