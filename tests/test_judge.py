"""The judge: results travel from the kernel as plain data, the grading process compares them.

Unit tests of :mod:`mha_course.judge` without a kernel: the encoding (exact types only), the
decoding of whatever a kernel may send, the trusted cases read from a test cell's source, and the
verdict written into an executed notebook.
"""
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from mha_course.kernel.cases import call_all
from mha_course.judge.core import first_failure, judge_notebook
from mha_course.judge.questions import course_questions
from mha_course.wire import MIME, NotPlain, decode, encode
from mha_course.notebook import notes_of, parse_runs

#: The static check of the "no copies" question (its assignment's grading_questions.py).
no_copies = course_questions()["grouped_attention_no_copies"].static


class AlwaysEqual:
    def __eq__(self, other):
        return True


class Sneaky(int):
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [
    0, -3, 2**80, 1.5, float("inf"), True, None, "bytes", (1, 2), [1, (2, 3)], {"q": (2, 8)}, {"a", "b"},
    np.arange(6, dtype=np.int32).reshape(2, 3), np.array([[True, False]]), np.linspace(0, 1, 5, dtype=np.float32),
])
def test_plain_data_comes_back_as_it_was(value):
    got = decode(encode(value))
    if isinstance(value, np.ndarray):
        assert type(got) is np.ndarray and got.dtype == value.dtype and np.array_equal(got, value)
    else:
        assert type(got) is type(value) and got == value


def test_a_namedtuple_arrives_as_a_tuple():
    from collections import namedtuple

    Shape = namedtuple("Shape", "B h n d_h")
    assert decode(encode(Shape(2, 8, 10, 64))) == (2, 8, 10, 64)


def test_a_numpy_scalar_stays_a_numpy_scalar():
    got = decode(encode(np.int64(7)))
    assert type(got) is np.int64 and got == 7


@pytest.mark.parametrize("value, named", [
    (AlwaysEqual(), "AlwaysEqual"),
    (Sneaky(64), "Sneaky"),
    (np.ma.masked_array([1.0, 2.0], mask=[True, True]), "MaskedArray"),
    (np.array([object()]), "dtype |O"),
    ((1, AlwaysEqual()), "AlwaysEqual"),
])
def test_anything_else_is_not_plain_data(value, named):
    got = decode(encode(value))
    assert isinstance(got, NotPlain) and named in got.what


def test_an_error_of_the_learner_is_kept_per_case():
    def call(x):
        if x == 2:
            raise IndexError("index 2 is out of bounds")
        return x

    (ok, _, _), (bad, error, _) = call_all(call, (1, 2))
    assert decode(ok) == 1 and isinstance(error, IndexError)
    assert vars(decode(bad)) == {"ename": "IndexError", "evalue": "index 2 is out of bounds", "where": None}


def test_an_error_of_the_learner_says_the_line_of_their_cell_that_raised_it():
    """A notebook cell's code (a kernel's temporary file) is the learner's: its deepest line is named (issue 36)."""
    namespace = {}
    source = "def expected_tokens(alpha, k):\n    x = 1\n    return (1 - alpha ** (k + 1)) / (1 - alpha)\n"
    exec(compile(source, "/tmp/ipykernel_4242/3141.py", "exec"), namespace)
    (bad, error, _), = call_all(lambda a, k: namespace["expected_tokens"](a, k), [(1.0, 3)])
    assert vars(decode(bad)) == {"ename": "ZeroDivisionError", "evalue": "float division by zero",
                                 "where": "line 3, in expected_tokens"}


def test_a_warning_of_the_learners_code_is_caught_per_case_and_never_printed(capfd):
    def log_mask(mask):
        return np.log(np.array(mask))  # log(False) = -inf: numpy warns "divide by zero"

    (warned, _, texts), (quiet, _, none) = call_all(log_mask, ([True, False], [True]))
    assert texts == ["RuntimeWarning: divide by zero encountered in log"] and none == []
    assert np.array_equal(decode(warned), [0.0, -np.inf]) and np.array_equal(decode(quiet), [0.0])
    assert capfd.readouterr().err == ""  # nothing on stderr, where nbgrader would zero the test cell


@pytest.mark.parametrize("data", [None, [], {"kind": "int", "value": 5}, {"kind": "int", "value": "5.0"},
                                  {"kind": "ndarray", "dtype": "<f8", "shape": [3], "data": "AAAA"},
                                  {"kind": "ndarray", "dtype": "|O", "shape": [1], "data": ""},
                                  {"kind": "tuple", "items": [{"kind": "set", "items": [{"kind": "list", "items": []}]}]},
                                  {"kind": "const", "value": 3}])
def test_malformed_data_is_refused(data):
    assert isinstance(decode(data), NotPlain)


def test_deep_nesting_is_refused():
    data = {"kind": "int", "value": "1"}
    for _ in range(50):
        data = {"kind": "list", "items": [data]}
    assert isinstance(decode(data), NotPlain)


def test_cases_are_read_from_the_source_as_literals():
    source = '"""doc"""\ndef _call(a, b):\n    return a\n\nrun("head_dim", _call, (512, 8), (4, 2))\nrun("x", f, "gpt2", {"d": 1})\n'
    assert parse_runs(source) == [("head_dim", [(512, 8), (4, 2)]), ("x", ["gpt2", {"d": 1}])]
    with pytest.raises(ValueError, match="literal cases only"):
        parse_runs('run("head_dim", head_dim, (512, 2 ** 3))')
    with pytest.raises(ValueError, match="needs a question id"):
        parse_runs('run("head_dim", head_dim)')


def test_every_kind_of_failure_has_a_one_line_reason():
    cases = [(512, 8), (768, 12)]
    assert first_failure("head_dim", cases, [encode(64), encode(64)]) is None
    assert first_failure("head_dim", cases, [encode(64), encode(64.0)]) == (
        1, "AssertionError", "expected head size d_h (d=768, h=12) as an int, got float (64.0): use // or int(...)")
    index, ename, message = first_failure("head_dim", cases, [encode(Sneaky(64)), encode(64)])
    assert (index, ename) == (0, "AssertionError") and "not plain data" in message and "Sneaky" in message
    assert first_failure("head_dim", cases, [encode(64)])[2].startswith("the test sent 1 result(s) for 2 case(s)")
    error = {"kind": "error", "ename": "NotImplementedError", "evalue": ""}
    assert first_failure("head_dim", cases, [error, error]) == (0, "NotImplementedError", "")


def test_the_diagnostic_messages_survive():
    (_, _, message) = first_failure("kv_bytes_read", [(8, 128, 8192, 16)], [encode(33554432 // 2)])
    assert message.endswith("off by a factor of 2 from K and V: check that each is counted, once")
    (_, _, message) = first_failure("kv_bytes_read", [(1, 3, 5, 3)], [encode(11)])
    assert message.endswith("rounded down: a partly used byte or block still counts whole; look at the division")


def _graded(source, outputs, grade_id="t", points=1):
    cell = new_code_cell(source, outputs=outputs)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": grade_id, "points": points, "locked": True}
    return cell


def _bundle(question, *values):
    return new_output("display_data", data={MIME: {"format": 1, "question": question,
                                                   "results": [encode(v) for v in values]}})


def test_judge_notebook_fails_a_wrong_cell_first_and_leaves_a_right_one():
    source = 'run("head_dim", head_dim, (512, 8))'
    right = _graded(source, [_bundle("head_dim", 64)])
    wrong = _graded(source, [new_output("execute_result", data={"text/plain": "1.0"}, execution_count=3),
                             _bundle("head_dim", 65)])
    missing = _graded(source, [])
    forged = _graded(source, [_bundle("score_count", 64)])
    nb = judge_notebook(new_notebook(cells=[right, wrong, missing, forged]))
    assert [o.output_type for o in nb.cells[0].outputs] == ["display_data"]
    first = nb.cells[1].outputs[0]
    assert (first.output_type, first.ename) == ("error", "AssertionError")
    assert first.evalue == "head size d_h (d=512, h=8): expected 64, got 65"
    # nbgrader reads an execute_result as partial credit: only the judge decides
    assert "execute_result" not in [o.output_type for o in nb.cells[1].outputs]
    assert "sent results for 0 of its 1 check(s)" in nb.cells[2].outputs[0].evalue
    assert "do not belong to this test" in nb.cells[3].outputs[0].evalue


def test_a_warning_sent_with_the_results_is_a_note_never_a_failure():
    cell = _graded('run("head_dim", head_dim, (512, 8))', [_bundle("head_dim", 64)])
    cell.outputs[0].data[MIME]["warnings"] = ["RuntimeWarning: divide by zero encountered in log"]
    (judged,) = judge_notebook(new_notebook(cells=[cell])).cells
    assert [o.output_type for o in judged.outputs] == ["display_data", "stream"]  # no error: full points
    (note,) = notes_of(judged)
    assert "RuntimeWarning: divide by zero encountered in log" in note and judged.outputs[1].text == note + "\n"


def test_a_name_error_points_at_the_failed_answer_cell():
    answer = new_code_cell("split_heads = mk.split_heads", outputs=[new_output(
        "error", ename="NotAvailableError", evalue="mk.split_heads is not available in 01_shapes", traceback=[])])
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "split_heads_answer"}
    test = _graded('run("split_heads", _call, (2, 3, 8, 2))', [_bundle("split_heads", 0)])
    test.outputs[0].data[MIME]["results"] = [{"kind": "error", "ename": "NameError", "evalue": "name 'split_heads' is not defined"}]
    nb = judge_notebook(new_notebook(cells=[answer, test]))
    assert nb.cells[1].outputs[0].ename == "NotAvailableError"
    assert nb.cells[1].outputs[0].evalue == "the answer cell above failed: mk.split_heads is not available in 01_shapes"


@pytest.mark.parametrize("code, named", [
    ("def grouped_attention(q, k, v):\n    k = np.repeat(k, 2, axis=0)", "repeat"),
    ("def grouped_attention(q, k, v):\n    k = k.repeat(2, axis=0)", "repeat"),
    ("from numpy import tile\ndef grouped_attention(q, k, v):\n    pass", "tile"),
    ("def grouped_attention(q, k, v):\n    k = k[np.arange(4) // 2]", "indexes k with an array"),
])
def test_copies_of_k_or_v_are_read_from_the_code(code, named):
    assert named in no_copies({"gqa_answer": code})


def test_reshaping_the_queries_is_no_copy():
    code = ("def grouped_attention(q, k, v):\n    h, n, d_h = q.shape\n    h_kv = k.shape[0]\n"
            "    q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)\n    return k[0], v[h_kv - 1]")
    assert no_copies({"gqa_answer": code}) is None


def test_a_broadcast_view_is_no_copy():
    """np.broadcast_to repeats nothing in memory: its name alone is no copy (the watched test sees a reshape that copies)."""
    code = "def grouped_attention(q, k, v):\n    k4 = np.broadcast_to(k[:, None], (2, 2, 3, 4))"
    assert no_copies({"gqa_answer": code}) is None


def test_every_question_id_of_the_notebooks_is_known():
    import grading_support as gs

    used = {q for a in gs.ASSIGNMENTS for c in gs.read("solutions", a).cells
            if c.metadata.get("nbgrader", {}).get("grade") for q, _ in parse_runs(c.source)}
    assert used == set(course_questions())


def test_in_the_learners_own_kernel_a_failure_is_one_line():
    """Run a test cell in a kernel of the full environment: the reason at once, and nothing else."""
    import grading_support as gs
    from nbval_kernels import execute_over_ipc

    nb = gs.submission("01_shapes", {"head_dim_answer": ("d_model // num_heads", "d_model / num_heads")})
    execute_over_ipc(nb, timeout=60, kernel_name="python3", allow_errors=True)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert [(e.ename, e.traceback) for e in errors] == [
        ("AssertionError", ["AssertionError: expected head size d_h (d=512, h=8) as an int, got float (64.0): "
                            "use // or int(...)"])]


def test_a_loop_over_heads_that_stacks_the_outputs_is_no_copy():
    code = ("def grouped_attention(q, k, v):\n    g = q.shape[0] // k.shape[0]\n"
            "    return np.stack([softmax(q[i] @ k[i // g].T) @ v[i // g] for i in range(q.shape[0])])")
    assert no_copies({"gqa_answer": code}) is None


@pytest.mark.parametrize("source", ["run(", 'run("no_such_question", f, 1)', "run(" * 100000])
def test_a_test_cell_the_course_does_not_know_fails_without_stopping_the_judge(source):
    nb = judge_notebook(new_notebook(cells=[_graded(source, [])]))
    assert "not one of the course's" in nb.cells[0].outputs[0].evalue
