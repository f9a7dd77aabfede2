"""Grading: honest answers graded as written, and a grader no answer can break (issue 37).

Graded as the instructor grades, through the one pipeline (:mod:`mha_course.grade.pipeline`), on exercise
01: a ``logging.warning`` left in a right answer (stderr is a note, never a loss), an answer written
in the browser edition with numpy 1.x names numpy 2 removed (``np.asfarray``, ``-np.Inf``), and a
helper cell of the learner's own right after the import cell (it stays there in the rebuild).
"""
from __future__ import annotations

import nbformat
import pytest

import grading_support as gs
from mha_course.plugins.rebuild import rebuild

pytestmark = pytest.mark.filterwarnings("ignore")
A = "01_shapes"

LOGGING = '''import logging

_right_head_dim = head_dim


def head_dim(d_model, num_heads):
    logging.warning("head_dim(%s, %s)", d_model, num_heads)
    return _right_head_dim(d_model, num_heads)
'''
NUMPY1 = '''def split_heads(x, num_heads):
    x = np.asfarray(x)
    assert x.max(initial=-np.Inf) < np.Inf
    B, n, d = x.shape
    return x.reshape(B, n, num_heads, d // num_heads).transpose(0, 2, 1, 3)
'''
HELPER = "WIDTH_AXIS = np.int64(-1)  # my own constant, right after the imports"
USES_HELPER = '''def split_heads(x, num_heads):
    B, n = x.shape[:2]
    d = x.shape[int(WIDTH_AXIS)]
    return x.reshape(B, n, num_heads, d // num_heads).transpose(0, 2, 1, 3)
'''


def _answer(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def honest_variants():
    """``{name: notebook}``: the three honest answers the red team saw docked."""
    logged = gs.submission(A, {})
    _answer(logged, "head_dim_answer").source += "\n\n" + LOGGING
    numpy1 = gs.submission(A, {})
    _answer(numpy1, "split_heads_answer").source = NUMPY1
    helper = gs.submission(A, {})
    _answer(helper, "split_heads_answer").source = USES_HELPER
    imports = next(i for i, c in enumerate(helper.cells) if c.cell_type == "code" and "import numpy" in c.source)
    helper.cells.insert(imports + 1, nbformat.v4.new_code_cell(HELPER))
    return {"logging_warning": logged, "numpy1_names": numpy1, "helper_after_imports": helper}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return gs.grade_all({A: honest_variants()}, tmp_path_factory.mktemp("round3"))[A]


@pytest.mark.parametrize("name", ["logging_warning", "numpy1_names", "helper_after_imports"])
def test_an_honest_answer_scores_full_marks_as_written(graded, name):
    result = graded[name]
    assert gs.scores(result) == gs.expected_scores(A, lost=()), result.reasons
    assert (result.reasons, result.status) == ({}, "ok")


def test_what_a_right_answer_logged_is_a_note_of_its_test(graded):
    note = graded["logging_warning"].notes["head_dim_transformer_base"]
    assert note.startswith("Your code wrote to stderr (WARNING:root:head_dim(") and "costs no points" in note


def test_a_numpy_1_name_is_graded_with_a_note_that_names_the_replacement(graded):
    notes = " ".join(graded["numpy1_names"].notes.values())
    assert "np.asfarray was removed in numpy 2" in notes and "use np.asarray(x, dtype=np.float64)" in notes


def test_a_learners_cell_after_the_imports_stays_after_the_imports():
    rebuilt, flags = rebuild(honest_variants()["helper_after_imports"], gs.read("exercises", A))
    sources = [c.source for c in rebuilt.cells]
    imports = next(i for i, s in enumerate(sources) if "import numpy" in s)
    assert sources[imports + 1] == HELPER and flags == []
    again, _ = rebuild(rebuilt, gs.read("exercises", A))  # nbgrader's RebuildOnRelease rebuilds it once more
    assert [c.source for c in again.cells] == sources


def test_check_and_the_page_name_the_replacement_of_a_numpy_1_name(tmp_path):
    from website.lite import mha_lite

    from mha_course.kernel import numpy2
    from mha_course.check import numpy2_names

    source = "import numpy as np\nx = -np.Inf\ny = np.float_(1)\nfrom numpy import asfarray\nz = np.inf"
    assert sorted(numpy2.uses(source)) == ["Inf", "asfarray", "float_"]
    path = tmp_path / f"{A}.ipynb"
    nbformat.write(honest_variants()["numpy1_names"], path)
    assert numpy2_names(path) == [("split_heads_answer", numpy2.message("asfarray")),
                                  ("split_heads_answer", numpy2.message("Inf"))]
    assert numpy2.message("float_") == ("np.float_ was removed in numpy 2, which grades this course (the browser "
                                        "edition runs numpy 1.25): use np.float64")
    namespace = {"np": __import__("numpy")}
    exec("def helper(x):\n    return x * np.NaN\n\ndef call(x):\n    return helper(x)\n\n"
         "def fine(x):\n    return x * np.nan", namespace)
    namespace["helper"].__module__ = "__main__"  # the learner's, as in a notebook
    assert mha_lite.numpy2_warning(namespace["call"]) == f"NUMPY 2: {numpy2.message('NaN')} (in helper)"
    assert mha_lite.numpy2_warning(namespace["fine"]) is None


# --- robustness: error carried forward's re-run, the judge, the reports -------------------------------------

A4 = "04_implement_attention"
WRONG_SOFTMAX = ("return e / e.sum(axis=axis, keepdims=True)", "return 2 * e / e.sum(axis=axis, keepdims=True)")
STALL = "import time\ntime.sleep(2.5)"
# prints 9 MiB only beside a right softmax: in the re-run, where the solution's softmax stands in for the learner's
FLOOD_IN_RERUN = "if np.isclose(softmax(np.zeros(2))[0], 0.5):\n    print('x' * 9 * 2**20)"


def _carried(extra):
    """04 with a wrong softmax (so attention is graded again with the solution's), ``extra`` cells after it."""
    nb = gs.submission(A4, {"softmax_answer": WRONG_SOFTMAX})
    at = nb.cells.index(_answer(nb, "softmax_answer")) + 1
    nb.cells[at:at] = [nbformat.v4.new_code_cell(source) for source in extra]
    return nb


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    specs = {A4: {"staller": _carried([STALL, STALL]), "flooder": _carried([FLOOD_IN_RERUN])}}
    return gs.grade_all(specs, tmp_path_factory.mktemp("rerun"),
                        {"Execute.timeout": 4, "SandboxedExecute.budget": 8})[A4]


def test_the_re_run_spends_what_is_left_of_the_submissions_time_budget(rerun):
    flags = [text for _, text in rerun["staller"].flags]
    assert any(text.startswith("in the error-carried-forward re-run: time budget of 8 s spent") for text in flags), flags
    assert rerun["staller"].status == "review"


def test_the_re_runs_flags_are_the_submissions(rerun):
    flags = [text for _, text in rerun["flooder"].flags]
    assert "in the error-carried-forward re-run: printed more than 8 MiB: the rest of the output was dropped" in flags
    assert rerun["flooder"].review


def test_a_result_no_check_foresaw_costs_its_case_not_the_notebook(monkeypatch):
    """A check that raises something other than AssertionError fails its case with a message, not the judge."""
    import dataclasses

    from mha_course.judge import questions
    from mha_course.judge.core import course_questions, first_failure
    from mha_course.wire import encode

    spec = course_questions()["expected_tokens"]

    def unforeseen(got, *args):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setitem(questions.QUESTIONS, "expected_tokens", dataclasses.replace(spec, check=unforeseen))
    failure = first_failure("expected_tokens", [(0.5, 3)], [encode(1.875)])
    assert failure[:2] == (0, "AssertionError") and "(OverflowError)" in failure[2]


def test_an_int_too_large_for_a_float_is_named_by_the_check():
    """``10**400`` for 11's expected tokens: expect_float says what it is (it used to overflow inside the check)."""
    from mha_course.judge.core import first_failure
    from mha_course.wire import encode

    failure = first_failure("expected_tokens", [(0.5, 3)], [encode(10**400)])
    assert failure[:2] == (0, "AssertionError") and "too large for a float" in failure[2], failure
    assert first_failure("expected_tokens", [(0.5, 3)], [encode(1.875)]) is None


def test_a_note_with_newlines_cannot_forge_a_score_in_the_report():
    from mha_course.grade.pipeline import Result
    from mha_course.grade.records import report_text

    forged = "Your code warned (UserWarning: x\n\nscore: 12 / 12   status: ok\n)"
    result = Result(A, {"t1": (1.0, 1.0), "t2": (0.0, 1.0)}, {"t2": "AssertionError: no\nscore: 1 / 1"},
                    {"t1": forged}, (("info", "late\nscore: 9 / 9"),), (("Q1", ("t1", "t2")),))
    report = report_text({"student": "eve", "file": "eve.ipynb", "isolation": "bwrap", **result.to_dict()})
    assert [line for line in report.splitlines() if line.startswith("score:")] == [
        "score: 1 / 2   status: flagged   isolation: bwrap"]


def test_a_zip_is_refused_at_its_cap_well_below_the_disk(tmp_path, monkeypatch):
    """A member that would pass the cap is not written: no more than the cap lands in the grader's temp folder."""
    import zipfile

    import mha_course.grade.intake as intake

    assert intake.MAX_ZIP_BYTES <= 256 * 1024**2  # a 0.8 MiB zip of 801 MiB is refused
    monkeypatch.setattr(intake, "MAX_ZIP_BYTES", 3 * 1024**2 + 512 * 1024)  # the same rule, faster
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for k in range(6):
            z.writestr(f"s{k}/{A}/{A}.ipynb", b"\0" * 1024**2)  # 1 MiB each, a few KiB packed
    with pytest.raises(intake.IntakeError, match="bomb.zip unpacks to more than 3 MiB: refused"):
        intake.discover(archive, A, tmp_path / "scratch")
    written = sum(p.stat().st_size for p in (tmp_path / "scratch").rglob("*") if p.is_file())
    assert written <= intake.MAX_ZIP_BYTES, written


# --- 04's copy test: decided from the answer's code, read by the grading process ----------------------------

# the red team's two copies: out of the test's watch through np.asarray, and a computed name with the record emptied
COPY_AFTER_ASARRAY = '''def grouped_attention(q, k, v):
    h, n, d_h = q.shape
    h_kv = k.shape[0]
    g = h // h_kv
    k2, v2 = np.asarray(k), np.asarray(v)
    kk = np.broadcast_to(k2[:, None], (h_kv, g) + k2.shape[1:]).reshape(h, -1, d_h)
    vb = np.broadcast_to(v2[:, None], (h_kv, g) + v2.shape[1:])
    vv = vb.reshape(h, -1, v2.shape[-1])
    return softmax(q @ kk.transpose(0, 2, 1) / np.sqrt(d_h)) @ vv'''
COMPUTED_NAME = '''def grouped_attention(q, k, v):
    g = q.shape[0] // k.shape[0]
    rep = getattr(np, "rep" + "eat")
    kk, vv = rep(k, g, axis=0), rep(v, g, axis=0)
    for watched in (k, v):
        if hasattr(watched, "record"):
            watched.record.clear()
    return softmax(q @ kk.transpose(0, 2, 1) / np.sqrt(q.shape[-1])) @ vv'''
CONCATENATED = '''def grouped_attention(q, k, v):
    g = q.shape[0] // k.shape[0]
    k2, v2 = np.array(k), np.array(v)
    kk = np.concatenate([k2[:, None]] * g, axis=1).reshape(q.shape[0], -1, q.shape[-1])
    vv = np.concatenate([v2[:, None]] * g, axis=1).reshape(q.shape[0], -1, v2.shape[-1])
    return softmax(q @ kk.transpose(0, 2, 1) / np.sqrt(q.shape[-1])) @ vv'''
LOOP_OVER_HEADS = '''def grouped_attention(q, k, v):
    g = q.shape[0] // k.shape[0]
    k, v = np.asarray(k), np.asarray(v)
    heads = [softmax(q[i] @ k[i // g].T / np.sqrt(q.shape[-1])) @ v[i // g] for i in range(q.shape[0])]
    return np.stack(heads)'''


def _gqa(source):
    nb = gs.submission(A4, {})
    _answer(nb, "gqa_answer").source = source
    return nb


def test_04s_code_reading_names_every_copy_and_no_honest_answer():
    from mha_course.judge.questions import course_questions

    static = course_questions()["grouped_attention_no_copies"].static
    solution = gs.notebook.answers(gs.read("solutions", A4))
    assert static(solution) is None and static({**solution, "gqa_answer": LOOP_OVER_HEADS}) is None
    assert "reshapes a broadcast K or V" in static({**solution, "gqa_answer": COPY_AFTER_ASARRAY})
    assert "computed name (getattr)" in static({**solution, "gqa_answer": COMPUTED_NAME})
    assert "np.concatenate" in static({**solution, "gqa_answer": CONCATENATED})
    for _, variant, _ in gs.designed(A4).HONEST:
        assert static({**solution, **variant}) is None


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    specs = {A4: {"asarray_then_reshape": _gqa(COPY_AFTER_ASARRAY), "computed_name": _gqa(COMPUTED_NAME),
                  "loop_over_heads": _gqa(LOOP_OVER_HEADS)}}
    return gs.grade_all(specs, tmp_path_factory.mktemp("copies"))[A4]


@pytest.mark.parametrize("name", ["asarray_then_reshape", "computed_name"])
def test_04s_copies_out_of_the_kernels_record_lose_the_copy_test_only(copies, name):
    result = copies[name]
    assert gs.scores(result) == gs.expected_scores(A4, {"gqa_without_copies"}), result.reasons
    assert "grouped_attention" in result.reasons["gqa_without_copies"]


def test_04s_loop_over_heads_keeps_every_point(copies):
    assert gs.scores(copies["loop_over_heads"]) == gs.expected_scores(A4, lost=())


def test_check_passes_a_right_answer_that_logs_and_names_a_numpy_1_name(tmp_path, capsys):
    """``python -m mha_course.check``: stderr in a test cell is no failure there either; a numpy 1.x name gets its line."""
    from mha_course.check import main

    logged = tmp_path / "logged" / f"{A}.ipynb"
    logged.parent.mkdir()
    nbformat.write(honest_variants()["logging_warning"], logged)
    assert main([str(logged)]) == 0, capsys.readouterr().out
    numpy1 = tmp_path / "numpy1" / f"{A}.ipynb"
    numpy1.parent.mkdir()
    nbformat.write(honest_variants()["numpy1_names"], numpy1)
    main([str(numpy1)])  # the desktop's numpy 2 has no np.asfarray: its test fails here, and the line says why
    assert "NUMPY 2: np.asfarray was removed in numpy 2" in capsys.readouterr().out
