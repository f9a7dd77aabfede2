"""Error carried forward, attacked: a later answer graded with a correct earlier answer in place of a failed one.

:mod:`mha_course.plugins.carry` grades a dependent answer D again, on a copy of the notebook whose
failed earlier answers carry the solution, when D failed with them. The unit tests read judged
notebooks made here (no kernel); the graded ones run nbgrader's autograde as the instructor does,
all in one subprocess, and read the autograded notebooks. What must hold: D still scores zero when
it is wrong, blank or calls a switched-off reference; the earlier answer never scores from the copy;
what the learner's code prints in the copy (the solution's source, say) never reaches the notebook.
"""

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

import grading_support as gs
from mha_course.plugins.carry import carry_forward, note, own_fault, plan, substituted_copy
from mha_course.judge.diagnoses import CATALOGUE
from mha_course.notebook import failure, notes_of, set_diagnosis

A4 = "04_implement_attention"
BUILDS_ON = {"b": ("a",), "c": ("a", "b")}  # c builds on a and b, b on a


def _answer(grade_id, source="pass"):
    return new_code_cell(source, metadata={"nbgrader": {"solution": True, "grade_id": grade_id}})


def _test(grade_id, passed):
    outputs = [] if passed else [new_output("error", ename="AssertionError", evalue="wrong", traceback=[])]
    return new_code_cell(f"run({grade_id!r}, f)", outputs=outputs,
                         metadata={"nbgrader": {"grade": True, "grade_id": grade_id, "points": 1}})


def _judged(failing):
    """A judged notebook of answers a, b, c with two test cells each; the tests in ``failing`` failed."""
    cells = [new_markdown_cell("# toy")]
    for answer in "abc":
        cells += [_answer(answer, f"def {answer}(): ..."), _test(f"{answer}1", f"{answer}1" not in failing),
                  _test(f"{answer}2", f"{answer}2" not in failing)]
    return new_notebook(cells=cells)


@pytest.mark.parametrize("failing, substituted, regraded", [
    (set(), set(), {}),  # all right: no second run
    ({"a1"}, set(), {}),  # a wrong, nothing built on it failed: no second run
    ({"b1"}, set(), {}),  # b wrong on its own (a right): no second run
    ({"c2", "b1"}, {"b"}, {"c": ["c2"]}),  # b wrong, c failed with it: b substituted (b's own tests stay failed)
    ({"a1", "b1", "c1", "c2"}, {"a"}, {"b": ["b1"], "c": ["c1", "c2"]}),  # b is graded again itself: only a substituted
])
def test_plan_substitutes_failed_dependencies_that_are_not_graded_again(failing, substituted, regraded):
    indices = {cell.metadata["nbgrader"]["grade_id"]: i for i, cell in enumerate(_judged(set()).cells) if i}
    assert plan(_judged(failing), BUILDS_ON) == (substituted, {d: [indices[t] for t in ts] for d, ts in regraded.items()})


def test_a_blank_dependent_is_not_graded_again_and_its_answer_may_be_substituted():
    nb = _judged({"a1", "b1", "c1"})
    assert plan(nb, BUILDS_ON, blank={"b", "c"}) == (set(), {})  # nothing to gain: no second run
    assert plan(nb, BUILDS_ON, blank={"b"}) == ({"a", "b"}, {"c": [8]})  # c graded with correct a and b


def test_the_copy_changes_only_the_substituted_answers_and_clears_every_output():
    nb = _judged({"a1", "b1", "c1"})
    twin = substituted_copy(nb, {"a"}, {"a": "def a(): return 1", "b": "def b(): return 2", "c": "def c(): return 3"})
    assert [c.source for c in twin.cells] == [c.source if i != 1 else "def a(): return 1" for i, c in enumerate(nb.cells)]
    assert all(c.outputs == [] for c in twin.cells if c.cell_type == "code")
    assert nb.cells[1].source == "def a(): ..." and nb.cells[2].outputs  # the primary notebook is untouched


def test_only_the_dependents_failed_cells_that_pass_in_the_copy_take_its_verdict():
    nb = _judged({"a1", "b1", "b2", "c1"})
    substituted, regrade = plan(nb, BUILDS_ON)
    twin = substituted_copy(nb, substituted, {"a": "def a(): return 1"})  # a's tests pass in the copy ...
    twin.cells[6].outputs = [new_output("error", ename="AssertionError", evalue="still wrong", traceback=[])]  # b2
    twin.cells[8].outputs = [new_output("stream", name="stdout", text="def a(): return 1")]  # c1 prints the solution
    carried = carry_forward(nb, twin, substituted, regrade, BUILDS_ON)
    assert carried == [5, 8]  # b1 and c1; b2 still fails; a1 never comes from the copy
    assert nb.cells[2].outputs[0].evalue == "wrong"
    assert [o.evalue for o in nb.cells[6].outputs] == [own_fault(None, {"a"}), "wrong"]  # b2: its own fault first
    for index in carried:
        assert nb.cells[index].outputs == [new_output("stream", name="stdout", text=note({"a"}) + "\n")]  # nothing else
        assert notes_of(nb.cells[index]) == [note({"a"})]


def _fails(evalue, diagnosis=None):
    cell = new_code_cell("run('c1', f)", outputs=[new_output("error", ename="AssertionError", evalue=evalue, traceback=[])])
    set_diagnosis(cell, diagnosis)
    return cell


@pytest.mark.parametrize("copy_fails, words", [
    # the judge found a slip of the catalogue in the copy: its message, then the earlier answer that failed
    (_fails("rope attention (...): the scores' scale is wrong", "scale_wrong"),
     f"{CATALOGUE['scale_wrong'].message}; your a fails its own test: fix it first"),
    # no diagnosis (the learner's code raised, quoting the solution): a fixed sentence, nothing of the copy's text
    (_fails("def a(): return 1  # THE SOLUTION"),
     "it also fails with a correct a in place of yours: look at your own code first; your a fails its own test: fix it first"),
    (_fails("wrong"), None),  # the same failure as beside the learner's own a: its reason already names its fault
])
def test_a_dependent_failing_in_the_copy_too_reports_its_own_fault_first(copy_fails, words):
    nb = _judged({"a1", "b1"})
    substituted, regrade = plan(nb, BUILDS_ON)
    twin = substituted_copy(nb, substituted, {"a": "def a(): return 1"})
    twin.cells[5] = copy_fails
    twin.cells[5].source = nb.cells[5].source
    assert carry_forward(nb, twin, substituted, regrade, BUILDS_ON) == []
    reasons = [o.evalue for o in nb.cells[5].outputs]
    assert reasons == ([words, "wrong"] if words else ["wrong"]) and failure(nb.cells[5]).endswith(reasons[0])
    assert "THE SOLUTION" not in nbformat.writes(nb)


def test_an_own_fault_line_fits_the_bound_for_every_diagnosis_and_dependency_of_the_course():
    from mha_course.course import COURSE

    for spec in COURSE.values():
        for used in spec.builds_on.values():
            for diagnosis in [*CATALOGUE, None]:
                assert len(own_fault(diagnosis, set(used))) <= 160, (used, diagnosis)


def test_a_cell_whose_source_differs_in_the_copy_is_not_carried():
    nb = _judged({"a1", "b1"})
    substituted, regrade = plan(nb, BUILDS_ON)
    twin = substituted_copy(nb, substituted, {"a": "def a(): return 1"})
    twin.cells[5].source = "pass"
    assert carry_forward(nb, twin, substituted, regrade, BUILDS_ON) == []


def test_the_note_names_the_replaced_answers_in_one_line():
    assert note({"softmax_answer"}).startswith("Graded with a correct softmax in place of yours")
    assert "a correct block_state and merge_states in place" in note({"merge_states_answer", "block_state_answer"})
    assert "\n" not in note({"rope_answer"})


# --- graded: the hostile submissions -------------------------------------------------------------------

SOFTMAX_BLANK = {"softmax_answer": None}
MH_NO_W_O = ("return out.transpose(1, 0, 2).reshape(n, h * d_h) @ w_o", "return out.transpose(1, 0, 2).reshape(n, h * d_h)")
MH_REFERENCE = ("def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=False):\n"
                "    return mk.multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=causal)[0]")
# Detects the copy (a softmax that works where the learner's raised), prints the solution's source there,
# and is otherwise the solution's multi-head attention: its own skill earns its points, nothing is leaked.
MH_DETECTS_COPY = '''import inspect

def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=False):
    try:
        softmax(np.zeros(2))
        print("IN THE " + "COPY:", inspect.getsource(softmax), In[-1] if "In" in globals() else "")
    except NotImplementedError:
        pass
    n, h = x.shape[0], num_heads
    d_h = w_q.shape[1] // h
    heads = [(x @ w).reshape(n, h, d_h).transpose(1, 0, 2) for w in (w_q, w_k, w_v)]
    mask = causal_mask(n) if causal else None
    out = np.stack([attention(heads[0][i], heads[1][i], heads[2][i], mask) for i in range(h)])
    return out.transpose(1, 0, 2).reshape(n, h * d_h) @ w_o'''
# Detects the copy and only there returns numbers it did not compute (its inputs, shaped right): still wrong.
MH_CHEATS_IN_COPY = '''def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=False):
    try:
        softmax(np.zeros(2))
        return x.copy()  # in the copy: something of the right shape
    except NotImplementedError:
        raise'''

SOFTMAX_TESTS = {"softmax_matches_reference", "softmax_large_scores_stable"}
MH_TESTS = {"multi_head_matches_mha_kit"}
CARRIED_WITH_SOFTMAX = {"attention_unmasked", "attention_causal", "gqa_matches_mha_kit", "gqa_without_copies"}

# (name, {answer: None (blank) | (old, new) | source}, test cells lost, test cells carried forward, words of a loss)
CASES = [
    ("blank_softmax_and_wrong_multi_head", {**SOFTMAX_BLANK, "multi_head_answer": MH_NO_W_O},
     SOFTMAX_TESTS | MH_TESTS, CARRIED_WITH_SOFTMAX, None),
    ("blank_softmax_and_blank_multi_head", {**SOFTMAX_BLANK, "multi_head_answer": None},
     SOFTMAX_TESTS | MH_TESTS, CARRIED_WITH_SOFTMAX, None),
    ("blank_softmax_and_multi_head_calls_the_reference", {**SOFTMAX_BLANK, "multi_head_answer": MH_REFERENCE},
     SOFTMAX_TESTS | MH_TESTS, CARRIED_WITH_SOFTMAX, "mk.multi_head_attention is not available"),
    ("multi_head_cheats_in_the_copy", {**SOFTMAX_BLANK, "multi_head_answer": MH_CHEATS_IN_COPY},
     SOFTMAX_TESTS | MH_TESTS, CARRIED_WITH_SOFTMAX, None),
    ("multi_head_detects_the_copy", {**SOFTMAX_BLANK, "multi_head_answer": MH_DETECTS_COPY},
     SOFTMAX_TESTS, CARRIED_WITH_SOFTMAX | MH_TESTS, None),
]


def _submission(changes, assignment=A4):
    nb = gs.submission(assignment, {k: v for k, v in changes.items() if v is None or isinstance(v, tuple)})
    for cell in nb.cells:
        source = changes.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if isinstance(source, str):
            cell.source = source
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("carry")
    results = gs.grade_all({A4: {name: _submission(changes) for name, changes, *_ in CASES}}, workdir)[A4]
    return results, {name: gs.autograded(workdir, A4, name) for name, *_ in CASES}


def _outputs(cell):
    return [o.get("text", "") + str(o.get("evalue", "")) for o in cell.get("outputs", [])]


@pytest.mark.parametrize("name, lost, carried, reason", [(n, lost, c, r) for n, _, lost, c, r in CASES],
                         ids=[c[0] for c in CASES])
def test_a_dependent_loses_its_own_points_and_no_more(graded, name, lost, carried, reason):
    results, notebooks = graded
    result = results[name]
    assert gs.scores(result) == gs.expected_scores(A4, lost)
    assert set(result.reasons) == lost
    assert all("NotImplementedError" in result.reasons[t] for t in SOFTMAX_TESTS)  # the earlier answer's own failure
    if reason:
        assert any(reason in result.reasons[t] for t in lost), result.reasons
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in notebooks[name].cells}
    for test in carried:
        assert _outputs(cells[test]) == [note({"softmax_answer"}) + "\n"], test
        assert result.notes[test] == note({"softmax_answer"}), test


def test_nothing_printed_in_the_copy_reaches_the_graded_notebook(graded):
    _, notebooks = graded
    text = nbformat.writes(notebooks["multi_head_detects_the_copy"])
    assert "IN THE COPY" not in text
    assert "np.max(x, axis=axis" not in text  # the solution's softmax


# --- graded: a dependent with its own fault reports it first, in fixed words ------------------------------

R8 = "08_rope"
ROPE_FORBIDDEN = "def rope(x, positions, base=10000.0):\n    return mk.rope(x, positions, base)"
SCALED_TWICE = ("q_rot, k_rot = rope(q, positions), rope(k, positions)",
                "q_rot, k_rot = rope(q, positions) / np.sqrt(q.shape[-1]), rope(k, positions)")
# Fails beside its own rope, and in the copy raises with the source of the rope it finds there: the solution's.
QUOTES_THE_COPY = '''import inspect

def rope_attention(q, k, v, positions):
    raise AssertionError("IN THE " + "COPY: " + inspect.getsource(rope))'''
OWN_FAULT = {"forbidden_rope_and_scaled_twice": {"rope_answer": ROPE_FORBIDDEN, "rope_attention_answer": SCALED_TWICE},
             "forbidden_rope_and_quotes_the_copy": {"rope_answer": ROPE_FORBIDDEN, "rope_attention_answer": QUOTES_THE_COPY}}


@pytest.fixture(scope="module")
def graded_08(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("own_fault")
    specs = {name: _submission(changes, R8) for name, changes in OWN_FAULT.items()}
    results = gs.grade_all({R8: specs}, workdir)[R8]
    return results, {name: gs.autograded(workdir, R8, name) for name in OWN_FAULT}


@pytest.mark.parametrize("name, first", [
    ("forbidden_rope_and_scaled_twice", CATALOGUE["scale_wrong"].message),
    ("forbidden_rope_and_quotes_the_copy", "it also fails with a correct rope in place of yours: look at your own code first"),
])
def test_graded_a_dependent_names_its_own_fault_before_the_failed_rope(graded_08, name, first):
    results, notebooks = graded_08
    result = results[name]
    assert gs.scores(result) == gs.expected_scores(R8, gs.lost_without(R8, "rope_answer") | {"rope_attention_causal"})
    assert result.reasons["rope_attention_causal"] == f"AssertionError: {first}; your rope fails its own test: fix it first"
    solution = gs.read("solutions", R8).cells  # nothing of the solution's rope reaches the learner
    (rope,) = [c.source for c in solution if c.metadata.get("nbgrader", {}).get("grade_id") == "rope_answer"]
    text = "\n".join([nbformat.writes(notebooks[name]), *result.reasons.values(), *result.notes.values()])
    assert "np.asarray(positions)[:, None]" in rope and "np.asarray(positions)[:, None]" not in text


# --- the learner's side: Validate and check run the learner's own answers, and point at the earlier one ---

def test_inline_a_blank_earlier_answer_is_named():
    from mha_course.kernel.cases import run

    def softmax(x):  # the release's stub of Q1
        raise NotImplementedError()

    def _call(n, s, d_h, d_v, causal, seed):  # Q3's test calls attention, which calls the blank softmax
        return softmax(np.zeros((n, s))) @ np.zeros((s, d_v))

    with pytest.raises(AssertionError, match="^not answered yet: your softmax, an earlier answer, still raises"):
        run("attention", _call, (3, 3, 4, 4, False, 1))


@pytest.mark.parametrize("question, failing, words", [
    ("multi_head_attention", {"softmax", "attention"}, "your softmax and attention fail their own tests: fix them first"),
    ("multi_head_attention", {"attention"}, "your attention fails its own test: fix it first"),
    ("multi_head_attention", set(), None),  # every earlier answer passes: none is blamed
    ("rope_attention", {"rope"}, "your rope fails its own test: fix it first"),
    ("softmax", {"softmax"}, None),  # Q1 builds on nothing: no pointer
])
def test_the_hint_names_only_the_earlier_answers_that_fail(question, failing, words):
    from mha_course.judge.hints import dependency_hint

    assert dependency_hint(question, failing) == words


def test_inline_a_wrong_dependent_names_its_own_fault_then_a_failing_rope():
    from mha_course.kernel import cases

    wrong = lambda *args: np.zeros((2, 4, 4))  # noqa: E731
    cases._failed_questions.clear()
    with pytest.raises(AssertionError) as passing_rope:
        cases.run("rope_attention", wrong, (2, 4, 4, 0, 0))
    with pytest.raises(AssertionError):
        cases.run("rope", lambda *args: np.zeros((3, 4)), (3, 4, 0, [0, 1, 2]))
    with pytest.raises(AssertionError) as failing_rope:
        cases.run("rope_attention", wrong, (2, 4, 4, 0, 0))
    cases._failed_questions.clear()
    assert "fails its own test" not in str(passing_rope.value)
    assert str(failing_rope.value) == f"{passing_rope.value}; your rope fails its own test: fix it first"


def test_selfgrade_shows_the_note_beside_a_carried_test(capsys):
    from mha_course.grade.pipeline import Result
    from mha_course.selfgrade import print_report

    line = note({"softmax_answer"})
    result = Result(A4, {"s1": (0.0, 1.0), "a1": (1.0, 1.0), "a2": (0.0, 2.0)},
                    {"s1": "NotImplementedError", "a2": "AssertionError: wrong"}, {"a1": line},
                    questions=(("Q1 (softmax)", ("s1",)), ("Q3 (attention)", ("a1", "a2"))))
    assert print_report(result) == (1.0, 4.0)
    out = capsys.readouterr().out.splitlines()
    assert f"    a1: 1 / 1  ({line})" in out and "    a2: 0 / 2  <- AssertionError: wrong" in out
    assert "Q3 (attention): 1 / 3" in out and "Total: 1 / 4" in out
