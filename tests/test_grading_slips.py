"""Issue 36: each slip a learner makes, written into a notebook, read back from ``check``'s (and
``selfgrade``'s) one line: the real error and its line (items 1 and 9), a named pair or a relative error
(2), the diagnosis (7), 1-based or quoted indices (8), the config's fields (6).

Three ``check`` runs and one ``selfgrade`` run, each a notebook with one slip per question.
"""
import contextlib
import io

import nbformat
import numpy as np
import pytest

import grading_support as gs
from mha_course import check, selfgrade
from mha_course.judge.core import first_failure
from mha_course.judge.questions import course_questions, spec_name


def _run(command, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = command.main([str(arg) for arg in args])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue()


def _notebook(tmp_path, assignment, changes, name):
    path = tmp_path / name / f"{assignment}.ipynb"
    path.parent.mkdir()
    nbformat.write(gs.submission(assignment, changes), path)
    return path


def _reason(output, start):
    """The failure line ``check`` printed under the test whose docstring begins with ``start``."""
    lines = output.splitlines()
    (reason,) = [line.strip() for head, line in zip(lines, lines[1:]) if head.startswith(f"FAIL: {start}")]
    return reason


@pytest.fixture(scope="module")
def long_context(tmp_path_factory):
    """12: Q1 badly indented, Q2 without the newest token, Q3 without the largest L_i added back."""
    tmp = tmp_path_factory.mktemp("slips12")
    return _run(check, _notebook(tmp, "12_long_context", {
        "llama3_answer": ("    wavelength = 2 * np.pi / theta", "      wavelength = 2 * np.pi / theta"),
        "sink_positions_answer": ("range(max(num_tokens - window, n_sink), num_tokens)",
                                  "range(max(num_tokens - window - 1, n_sink), num_tokens - 1)"),
        "merge_splits_answer": ("return out, m + np.log(total)", "return out, np.log(total)")}, "a"))


@pytest.fixture(scope="module")
def long_context_unnamed(tmp_path_factory):
    """12: Q1 with a blend clipped short of 1 (no named slip), Q2 with sinks counted from 1."""
    tmp = tmp_path_factory.mktemp("slips12b")
    return _run(check, _notebook(tmp, "12_long_context", {
        "llama3_answer": ("0.0, 1.0)", "0.0, 0.5)"),
        "sink_positions_answer": ("sinks = list(range(min(n_sink, num_tokens)))",
                                  "sinks = list(range(1, min(n_sink, num_tokens) + 1))")}, "b"))


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """11: Q1 without the alpha = 1 guard, Q2 caching the sampled token, Q4 with P - 2Vd."""
    tmp = tmp_path_factory.mktemp("slips11")
    return _run(check, _notebook(tmp, "11_serving_2026", {
        "expected_tokens_answer": ("    if alpha == 1:\n        return float(k + 1)  # every draft passes, then the bonus token\n",
                                   ""),
        "block_reuse_answer": ("list(output)[:-1]", "list(output)"),
        "ttft_answer": ("params - facts.vocab_size * facts.config.d_model",
                        "params - 2 * facts.vocab_size * facts.config.d_model")}, "c"))


def test_an_indentation_error_is_named_with_its_line_not_as_a_name_error(long_context):
    code, out = long_context
    assert code == 1
    assert ("the cell run before this test failed with IndentationError: unexpected indent (line 19)"
            in _reason(out, "Frequencies of Llama 3.1"))
    assert "NameError" not in out


def test_an_answer_that_raises_names_the_case_and_the_line(serving):
    code, out = serving
    assert code == 1
    assert _reason(out, "Tokens per step") == (
        "ZeroDivisionError: float division by zero (raised by your code for expected tokens per step "
        "(alpha=1.0, k=3); line 16, in expected_tokens)")


def test_the_diagnoses_are_named(long_context, serving):
    assert "is left out: the window ends with it" in _reason(long_context[1], "Positions kept with 4 sinks")
    assert "add the largest L_i back" in _reason(long_context[1], "Merge of 4 splits")
    assert "the output head is multiplied, not looked up" in _reason(serving[1], "TTFT of Llama 3 8B")


def test_indices_are_one_based_or_quoted(serving, long_context_unnamed):
    assert ("request 6 of 7 reuses 8, got 12: the last output token was sampled"
            in _reason(serving[1], "Reuse of seven requests"))
    assert "item 1 of 12 should be position 0, got 1" in _reason(long_context_unnamed[1], "Positions kept with 4 sinks")


def test_an_unnamed_frequency_slip_names_the_pair_and_the_ratio(long_context_unnamed):
    line = _reason(long_context_unnamed[1], "Frequencies of Llama 3.1")
    assert "pair i = " in line and "x the expected value" in line and "largest difference" not in line


def test_a_hidden_case_names_the_config_s_fields(tmp_path):
    """selfgrade shows hidden cases' messages: a custom config is named by its fields (item 6)."""
    path = _notebook(tmp_path, "11_serving_2026", {"handoff_answer": ("-(-numbers * bits // 8)", "numbers * bits // 8")},
                     "d")
    code, out = _run(selfgrade, path)
    assert code == 1
    assert "handoff of the cache of a config (d=6, h=2, h_kv=1, d_h=3, L=5) (7 tokens, 100 Gb/s, 3-bit)" in out
    assert spec_name({"d_model": 6, "num_heads": 2, "kv_lora_rank": 4}) == "a config (d=6, h=2, d_c=4)"


def test_one_maximum_for_every_row_fails_the_hidden_rows_of_either_sign():
    """12 Q3's hidden case with rows near +1,000 and -1,000 catches a merge shifted by one global maximum (item 10)."""
    import importlib

    from mha_course.wire import encode

    case = (4, 4, 3, 6, [1000.0, -1000.0, 1000.0, -1000.0], 2.0)
    questions = importlib.import_module(course_questions()["merge_splits"].check.__module__)
    outs, lses = questions.split_inputs(*case)
    with np.errstate(all="ignore"):
        weights = np.exp(lses - lses.max())  # one maximum for every row: the rows near -1,000 underflow
        total = weights.sum(axis=0)
        got = ((weights[..., None] * outs).sum(axis=0) / total[:, None], lses.max() + np.log(total))
    failure = first_failure("merge_splits", [case], [encode(got)])
    assert failure is not None and "shift each row by its own largest L_i" in failure[2]


def test_a_blank_notebook_says_not_answered_yet_and_nothing_else():
    """04 left blank: each test says "not answered yet", without "your softmax fails its own test" (item 11)."""
    import warnings

    from mha_course.kernel import cases

    nb = gs.submission("04_implement_attention", {answer: None for answer in gs.answer_ids("04_implement_attention")})
    namespace, messages = {}, []
    cases._failed_questions.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            try:
                exec(compile(cell.source, "cell", "exec"), namespace)
            except Exception as error:  # noqa: BLE001 - every failure is a learner's message
                messages.append(str(error))
    tests = [m for m in messages if m.startswith("not answered yet")]
    assert len(tests) == len(gs.points_of_tests("04_implement_attention"))
    assert not [m for m in messages if "fails its own test" in m]
