"""The grading side of the judge: read a test cell's trusted cases, compare the kernel's results.

For each graded test cell :func:`judge_notebook` takes the cases from the cell's source (the
instructor's, restored by nbgrader's ``OverwriteCells`` before the notebook ran), the results the
kernel sent (outputs of mime type :data:`~mha_course.judge.cases.MIME`, one per ``run`` call, in
order), and compares every result with the reference computed here by ``mha_kit``
(:mod:`mha_course.judge.questions`). A failing case becomes an ``error`` output at the top of
the test cell, so nbgrader's ``SaveAutoGrades`` scores it as any failing cell. Missing, extra or
mismatched results fail; a result that is not plain data fails with its type named.

Nothing here runs code from the notebook: the cases are read with ``ast.literal_eval``, the
results are decoded from JSON.
"""
from __future__ import annotations

import ast
import base64
import math

import numpy as np

from .cases import ARRAY_KINDS, FORMAT, MAX_DEPTH, MIME
from .cases import without_file_name

#: Largest array the judge decodes (bytes); bigger answers fail their case.
MAX_ARRAY_BYTES = 64 * 2**20


class NotPlain:
    """A result the kernel could not send as plain data (``type`` names what it was)."""

    def __init__(self, what):
        self.what = what


class LearnerError:
    """An exception the learner's code raised for one case."""

    def __init__(self, ename, evalue):
        self.ename, self.evalue = ename, evalue


def _text(value, default="?"):
    return value[:500] if type(value) is str else default


def _array(data):
    try:
        dtype = np.dtype(data["dtype"])
        shape = tuple(data["shape"])
        raw = base64.b64decode(data["data"], validate=True)
    except (KeyError, TypeError, ValueError):
        return NotPlain("a malformed array")
    if dtype.kind not in ARRAY_KINDS or any(type(n) is not int or n < 0 for n in shape):
        return NotPlain(f"an array of dtype {dtype.str}")
    if len(raw) > MAX_ARRAY_BYTES or len(raw) != math.prod(shape) * dtype.itemsize:
        return NotPlain("an array whose data does not match its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def decode(data, depth=0):
    """The Python value of one encoded result, or a :class:`NotPlain` / :class:`LearnerError`."""
    if not isinstance(data, dict) or depth > MAX_DEPTH + 1:
        return NotPlain("malformed data")
    kind = data.get("kind")
    if kind == "error":
        return LearnerError(_text(data.get("ename"), "Exception"), _text(data.get("evalue"), ""))
    if kind == "other":
        return NotPlain(_text(data.get("type")))
    if kind == "const" and (data.get("value") is None or type(data.get("value")) is bool):
        return data["value"]
    if kind in ("int", "float") and type(data.get("value")) is str and len(data["value"]) < 5000:
        try:
            return int(data["value"]) if kind == "int" else float(data["value"])
        except ValueError:
            return NotPlain("a malformed number")
    if kind == "str" and type(data.get("value")) is str:
        return data["value"]
    if kind == "ndarray":
        return _array(data)
    if kind == "numpy" and isinstance(data.get("value"), dict):
        value = _array(data["value"])
        return value if isinstance(value, NotPlain) or value.shape != () else value[()]
    if kind in ("tuple", "list", "set", "frozenset", "dict") and type(data.get("items")) is list:
        return _container(kind, data["items"], depth)
    return NotPlain("malformed data")


def _container(kind, items, depth):
    if kind == "dict":
        pairs = [(decode(k, depth + 1), decode(v, depth + 1)) for k, v in
                 (item if type(item) is list and len(item) == 2 else (None, None) for item in items)]
        values = [x for pair in pairs for x in pair]
    else:
        values = [decode(item, depth + 1) for item in items]
    bad = [v for v in values if isinstance(v, (NotPlain, LearnerError))]
    if bad:
        return bad[0] if isinstance(bad[0], NotPlain) else NotPlain("an error object")
    try:
        return dict(pairs) if kind == "dict" else {"tuple": tuple, "list": list, "set": set,
                                                   "frozenset": frozenset}[kind](values)
    except TypeError:  # unhashable keys or set items
        return NotPlain(f"a {kind} of unhashable items")


def parse_runs(source):
    """``[(question, [case, ...])]`` of the top-level ``run(...)`` calls of a test cell's source.

    Only literal cases are allowed (``ast.literal_eval``); anything else is a course bug and
    raises ``ValueError``.
    """
    runs = []
    for stmt in ast.parse(source).body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "run"):
            continue
        if len(call.args) < 3 or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
            raise ValueError(f"run(...) needs a question id, a callable and literal cases: {ast.unparse(call)}")
        try:
            question = ast.literal_eval(call.args[0])
            cases = [ast.literal_eval(arg) for arg in call.args[2:]]
        except ValueError:
            raise ValueError(f"run(...) takes literal cases only: {ast.unparse(call)}") from None
        runs.append((question, cases))
    return runs


def first_failure(question, cases, results, answers=None):
    """``None`` when every case passes, else ``(case index, ename, message)`` of the first failure.

    ``results`` are the encoded results the kernel sent; ``answers`` maps the notebook's answer
    grade_ids to their source, for checks that read the answer's code (``None``: skip them).
    """
    from .questions import QUESTIONS

    spec = QUESTIONS[question]
    if type(results) is not list or len(results) != len(cases):
        count = len(results) if type(results) is list else "no"
        return 0, "AssertionError", f"the test sent {count} result(s) for {len(cases)} case(s): rerun the whole notebook"
    if answers is not None and spec.static is not None:
        message = spec.static(answers)
        if message:
            return 0, "AssertionError", message
    for index, (case, data) in enumerate(zip(cases, results)):
        failure = _judge_case(spec, case, decode(data))
        if failure:
            return (index, *failure)
    return None


def _judge_case(spec, case, got):
    args = case if type(case) is tuple else (case,)
    if isinstance(got, LearnerError):
        return got.ename, got.evalue
    if isinstance(got, NotPlain):
        return "AssertionError", (f"{spec.describe(*args)}: the answer is not plain data ({got.what}): return "
                                  "a plain int, float, str, tuple, list, dict, set or numpy array")
    try:
        spec.check(got, *args)
    except AssertionError as error:
        return "AssertionError", str(error).splitlines()[0] if str(error) else spec.describe(*args)
    return None


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def results_of(cell):
    """The results bundles of a cell's outputs, in order (the payload dicts)."""
    return [out["data"][MIME] for out in cell.get("outputs", [])
            if out.get("output_type") in ("display_data", "execute_result") and MIME in out.get("data", {})]


def _runs(source):
    """:func:`parse_runs`, or ``None`` when the source cannot be read (a forged cell, not the course's)."""
    try:
        return parse_runs(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def judge_cell(cell, answers):
    """``None`` or ``(ename, message)``: the verdict on one graded test cell's results."""
    from .questions import QUESTIONS

    runs = _runs(cell["source"])
    if runs is None or any(question not in QUESTIONS for question, _ in runs):
        return "AssertionError", "this test cell is not one of the course's: restore it from the release"
    bundles = results_of(cell)
    if len(bundles) != len(runs):
        return "AssertionError", (f"the test cell sent results for {len(bundles)} of its {len(runs)} check(s): "
                                  "did an earlier cell fail, or did the code print results of its own?")
    for (question, cases), bundle in zip(runs, bundles):
        if not isinstance(bundle, dict) or bundle.get("format") != FORMAT or bundle.get("question") != question:
            return "AssertionError", f"the results sent for {question!r} do not belong to this test: rerun the notebook"
        failure = first_failure(question, cases, bundle.get("results"), answers)
        if failure:
            return failure[1:]
    return None


def _error_output(ename, message):
    from nbformat import NotebookNode

    return NotebookNode(output_type="error", ename=ename, evalue=message,
                        traceback=[f"{ename}: {message}", "(judged by the grader, outside the notebook's kernel)"])


def _answer_error(answer_cell):
    """The first error output of an answer cell, as ``(ename, evalue)``, or ``None``."""
    for out in (answer_cell or {}).get("outputs", []):
        if out.get("output_type") == "error":
            return _text(out.get("ename"), "Exception"), without_file_name(_text(out.get("evalue"), ""))
    return None


def judge_notebook(nb, assignment=None):
    """Judge every graded test cell of an executed notebook in place; return the notebook.

    A failing test cell gets an ``error`` output first among its outputs (unless the kernel already
    reported an error there: it scores zero either way). Outputs that nbgrader would read as partial
    credit (``execute_result``) become plain ``display_data``: only the judge decides a score.
    ``assignment`` is the assignment's name (kept for messages; the cells say everything else).
    """
    answers, answer_cells, owner = {}, {}, None
    for cell in nb.cells:
        meta = _meta(cell)
        if meta.get("solution"):
            answers[meta.get("grade_id")] = cell.get("source", "")
            owner = cell
        if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "execute_result":
                out["output_type"] = "display_data"
                out.pop("execution_count", None)
        if _runs(cell["source"]) == []:
            continue  # not in the judge's format: nbgrader scores it as it ran
        verdict = judge_cell(cell, answers)
        if verdict is None:
            continue
        if verdict[0] == "NameError" and _answer_error(owner):
            ename, evalue = _answer_error(owner)
            verdict = ename, f"the answer cell above failed: {evalue}"  # shown as "SyntaxError: the answer ..."
        if not any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            cell.setdefault("outputs", []).insert(0, _error_output(*verdict))
    return nb
