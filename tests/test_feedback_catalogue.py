"""Feedback that teaches: every designed slip fails a VISIBLE test with its diagnosis (issue 26).

Each submission is the release (visible tests only) with the solutions filled in and one designed
wrong answer of ``solutions/<a>/grading_answers.py`` put in (``tests/grading_support.py``); its code
cells run in order in one namespace, as a learner's kernel runs them, and each test cell's
``run(...)`` judges at once (the inline judge of ``mha_course.check`` and Validate). No kernel, no
nbgrader: the whole module takes about a second.
"""
import re
import warnings

import numpy as np
import pytest

import grading_support as gs
from mha_course.course import COURSE
from mha_course.kernel import cases
from mha_course.plugins.carry import _used_by
from mha_course.judge.core import answer_error
from mha_course.judge.diagnoses import CATALOGUE, check, diagnose, matches

#: The assignments whose questions call the catalogue, and whose designed slips list their diagnosis: all of them.
COVERED = tuple(COURSE)
#: Longest message a designed wrong answer may give (one line); a custom config's fields are named (issue 36).
MAX_MESSAGE = 180


def visible_failures(assignment, changes):
    """``{test grade_id: one-line message}`` of the visible test cells that fail for this submission."""
    nb = gs.submission(assignment, changes)
    namespace, failures, owner = {}, {}, None
    cases._failed_questions.clear()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # a learner sees numpy's overflow warning beside the message
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            owner = meta.get("grade_id") if meta.get("solution") else owner
            if cell.cell_type != "code":
                continue
            try:
                exec(compile(cell.source, meta.get("grade_id", "setup"), "exec"), namespace)
            except Exception as error:  # noqa: BLE001 - every failure of a learner's cell is recorded
                failures[meta.get("grade_id", owner)] = (str(error) if isinstance(error, AssertionError)
                                                         else f"{type(error).__name__}: {error}")
    return failures


def _slips(assignment):
    return gs.WRONG_ANSWERS[assignment]


def _words(diagnosis):
    return CATALOGUE[diagnosis].message if diagnosis in CATALOGUE else diagnosis


SLIPS = [(a, w[0]) for a in COVERED for w in _slips(a)]


@pytest.fixture(scope="module")
def failures():
    """``{(assignment, slip): visible failures}`` for every designed slip of the covered assignments."""
    return {(a, w[0]): visible_failures(a, {w[1]: (w[2], w[3])}) for a in COVERED for w in _slips(a)}


@pytest.mark.parametrize("assignment", COVERED)
def test_the_solution_passes_every_visible_test(assignment):
    assert visible_failures(assignment, {}) == {}


@pytest.mark.parametrize("assignment", COVERED)
def test_every_designed_slip_lists_its_diagnosis(assignment):
    listed = gs.designed(assignment).DIAGNOSES
    assert set(listed) == {w[0] for w in _slips(assignment)}


def _answer_of(assignment, slip):
    (answer,) = [w[1] for w in _slips(assignment) if w[0] == slip]
    return answer


def _dependents(assignment, answer):
    """Test cells of the answers that call ``answer`` (directly or through another answer)."""
    builds_on = COURSE[assignment].builds_on
    return {t for d in builds_on if answer in _used_by(d, builds_on) for t in gs.tests_of_answer(assignment)[d]}


@pytest.mark.parametrize("assignment, slip", SLIPS)
def test_a_slip_fails_its_visible_test_with_its_diagnosis(failures, assignment, slip):
    answer = _answer_of(assignment, slip)
    (lost,) = [w[4] for w in _slips(assignment) if w[0] == slip]  # the test cells the slip must fail (graded)
    own, got = gs.tests_of_answer(assignment)[answer], failures[assignment, slip]
    assert set(lost) <= set(got) <= set(own) | _dependents(assignment, answer), sorted(got)
    words = _words(gs.designed(assignment).DIAGNOSES[slip])
    assert all(words in got[test] for test in lost), (words, got)


@pytest.mark.parametrize("assignment, slip", SLIPS)
def test_a_slips_messages_are_short_and_blame_only_a_failing_dependency(failures, assignment, slip):
    answer = _answer_of(assignment, slip)
    own, got = gs.tests_of_answer(assignment)[answer], failures[assignment, slip]
    hint = f"; your {answer.removesuffix('_answer')} fails its own test: fix it first"
    for test, message in got.items():
        assert "\n" not in message and len(message) <= MAX_MESSAGE, (test, len(message), message)
        blamed = "fails its own test" in message or "fail their own tests" in message
        assert message.endswith(hint) if test not in own else not blamed, (test, message)


def test_the_arange_rope_fails_q1s_visible_test():
    got = visible_failures("08_rope", {"rope_answer": ("angle = np.asarray(positions)[:, None]",
                                                       "angle = np.arange(len(positions))[:, None]")})
    assert CATALOGUE["positions_ignored"].message in got["rope_matches_mha_kit"]


@pytest.mark.parametrize("name, assignments", [
    ("rounding", {"03_kv_cache", "07_flash_attention", "10_serving"}),
    ("bits_vs_bytes", {"03_kv_cache", "07_flash_attention", "10_serving"}),
    ("scale_wrong", {"07_flash_attention", "08_rope"}),
    ("scale_missing", {"06_spot_the_bug", "07_flash_attention"}),
    ("h_vs_h_kv", {"03_kv_cache", "10_serving", "11_serving_2026"}),
    ("wrong_kv_head", {"04_implement_attention", "06_spot_the_bug"}),
])
def test_the_same_slip_gets_the_same_words_in_every_assignment(failures, name, assignments):
    seen = {}
    for (assignment, slip), got in failures.items():
        if gs.designed(assignment).DIAGNOSES[slip] == name:  # the answer's own tests (a dependent's blame the answer)
            own = gs.tests_of_answer(assignment)[_answer_of(assignment, slip)]
            seen.setdefault(assignment, []).extend(m for test, m in got.items() if test in own)
    assert assignments <= set(seen)
    texts = {re.sub(r"^.*?: (?=" + re.escape(CATALOGUE[name].message) + ")", "", m) for ms in seen.values() for m in ms}
    assert texts == {CATALOGUE[name].message}


def test_own_fault_first_then_the_dependency_that_fails():
    """Two faults: 08's rope ignores the positions (its test fails) and Q4 scales twice (its own fault).
    Q4's visible case sits at 0..3, where that rope is right, so Q4's message names Q4's fault first."""
    got = visible_failures("08_rope", {
        "rope_answer": ("angle = np.asarray(positions)[:, None]", "angle = np.arange(x.shape[-2])[:, None]"),
        "rope_attention_answer": ("q_rot, k_rot = rope(q, positions), rope(k, positions)",
                                  "q_rot, k_rot = rope(q, positions) / np.sqrt(q.shape[-1]), rope(k, positions)")})
    message = got["rope_attention_causal"]
    assert message.index(CATALOGUE["scale_wrong"].message) < message.index("your rope fails its own test")
    assert len(message) <= MAX_MESSAGE


def test_a_dependency_that_passes_is_not_blamed():
    got = visible_failures("08_rope", {"rope_score_answer": ("@ rope(k[None], [p])[0]", "@ k")})
    assert list(got) == ["rope_score_one_pair"] and "rope" not in got["rope_score_one_pair"].split(":")[-1]


def test_every_catalogue_message_is_short_and_gives_no_formula():
    for diagnosis in CATALOGUE.values():
        assert len(diagnosis.message) <= 90, diagnosis.name
        assert not re.search(r"sqrt|/ ?8|\*\*|//", diagnosis.message), diagnosis.name


def test_a_right_answer_is_never_diagnosed():
    expected = np.arange(6.0).reshape(2, 3)
    assert diagnose(expected.copy(), expected, {"unscaled": [expected]}, "scale_missing") is None


@pytest.mark.parametrize("got, expected, context, name", [
    (8 * 1000, 1000, {}, "bits_vs_bytes"),
    (500, 1000, {"k_or_v": [500]}, "k_and_v"),
    (4000, 1000, {"h": 32, "h_kv": 8}, "h_vs_h_kv"),
    (np.arange(6.0).reshape(2, 3).T.copy(), np.arange(6.0).reshape(2, 3), {}, "transposed"),
    ([6, 1, 0], [7, 1, 1], {"floor": [[6, 1, 0]]}, "rounding"),
    ((np.array([1.0]), np.array([np.inf])), (np.array([1.0]), np.array([2.0])), {}, "no_max_shift"),
])
def test_a_detector_recognises_its_signature(got, expected, context, name):
    assert diagnose(got, expected, context, *CATALOGUE).name == name


def test_check_raises_one_line_with_the_quantity_and_the_message():
    with pytest.raises(AssertionError, match=r"^cache bytes: a count in bits where bytes are asked"):
        check(8 * 1000, 1000, "cache bytes", {}, "bits_vs_bytes")
    check(1000, 1000, "cache bytes", {}, "bits_vs_bytes")  # right: nothing raised


def test_matches_compares_exact_types():
    assert matches(7, 7) and not matches(7.5, 7) and not matches("7", 7) and not matches(True, 1)
    assert matches([1, 2], [1, 2]) and not matches((1, 2), [1, 2])


@pytest.mark.parametrize("evalue", ["'(' was never closed (/tmp/ipykernel_812/3141592653.py, line 2)",
                                    "'(' was never closed (3141592653.py, line 2)"])
def test_a_syntax_error_does_not_show_the_kernels_temporary_file(evalue):
    cell = {"outputs": [{"output_type": "error", "ename": "SyntaxError", "evalue": evalue}]}
    assert answer_error(cell) == ("SyntaxError", "'(' was never closed (line 2)")
    assert cases.without_file_name("name (in f) is wrong") == "name (in f) is wrong"  # other parentheses stay
