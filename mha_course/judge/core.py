"""The grading side of the judge: read a test cell's trusted cases, compare the kernel's results.

For each graded test cell :func:`judge_notebook` takes the cases from the cell's source (the
instructor's, restored by nbgrader's ``OverwriteCells`` before the notebook ran), the results the
kernel sent (outputs of mime type :data:`~mha_course.wire.MIME`, one per ``run`` call, in
order), and compares every result with the reference computed here by ``mha_kit``
(:mod:`mha_course.judge.questions`). A failing case becomes an ``error`` output at the top of
the test cell, so nbgrader's ``SaveAutoGrades`` scores it as any failing cell. Missing, extra or
mismatched results fail; a result that is not plain data fails with its type named. Warnings the
learner's code raised become a note of the cell (:func:`mha_course.notebook.add_note`), never a
failure.

Nothing here runs code from the notebook: the cases are read with ``ast.literal_eval``, the
results are decoded from JSON.
"""
from __future__ import annotations

from ..notebook import add_note, first_error, is_answer, is_test, meta, parse_runs, set_diagnosis
from ..wire import FORMAT, MIME, LearnerError, NotPlain, decode, warning_note, warnings_of, without_file_name
from .diagnoses import Diagnosed
from .questions import course_questions


def first_failure(question, cases, results, answers=None):
    """``None`` when every case passes, else ``(case index, ename, message)`` of the first failure.

    ``results`` are the encoded results the kernel sent; ``answers`` maps the notebook's answer
    grade_ids to their source, for checks that read the answer's code (``None``: skip them).
    """
    failure = _first_failure(question, cases, results, answers)
    return None if failure is None else failure[:3]


def _first_failure(question, cases, results, answers):
    """:func:`first_failure`, with a fourth item: the name of the catalogue's diagnosis, or ``None``."""
    spec = course_questions()[question]
    if type(results) is not list or len(results) != len(cases):
        count = len(results) if type(results) is list else "no"
        return 0, "AssertionError", f"the test sent {count} result(s) for {len(cases)} case(s): rerun the whole notebook", None
    if answers is not None and spec.static is not None:
        try:
            message = spec.static(answers)
        except Exception as error:  # noqa: BLE001 (an answer no check foresaw costs its question, not the notebook)
            message = f"the grader could not read this answer ({type(error).__name__}): look at its code"
        if message:
            return 0, "AssertionError", message, None
    for index, (case, data) in enumerate(zip(cases, results)):
        failure = _judge_case(spec, case, decode(data))
        if failure:
            return (index, *failure)
    return None


def _judge_case(spec, case, got):
    """``None``, or ``(ename, message, diagnosis name or None)`` of a failed case."""
    args = case if type(case) is tuple else (case,)
    if isinstance(got, LearnerError):
        if got.ename in ("NotImplementedError", "NameError"):
            return got.ename, got.evalue, None  # a blank answer, or an answer cell that failed: said elsewhere
        return got.ename, f"{got.evalue} ({raised_note(spec, args, got.where)})", None
    if isinstance(got, NotPlain):
        return "AssertionError", (f"{spec.describe(*args)}: the answer is not plain data ({got.what}): return "
                                  "a plain int, float, str, tuple, list, dict, set or numpy array"), None
    try:
        spec.check(got, *args)
    except AssertionError as error:
        message = str(error).splitlines()[0] if str(error) else spec.describe(*args)
        return "AssertionError", message, error.name if isinstance(error, Diagnosed) else None
    except Exception as error:  # noqa: BLE001 (10**400 -> OverflowError: the case fails, the notebook is graded)
        return "AssertionError", (f"{spec.describe(*args)}: the result could not be compared with the reference "
                                  f"({type(error).__name__}): is it a plain number of a sensible size?"), None
    return None


def raised_note(spec, args, where):
    """``"raised by your code for <the case>; line 17, in expected_tokens"``: where a learner's error came from.

    ``spec`` is a :class:`~mha_course.judge.questions.Question` or a question id; ``where`` the line, or None.
    """
    spec = course_questions()[spec] if type(spec) is str else spec
    args = args if type(args) is tuple else (args,)
    return f"raised by your code for {spec.describe(*args)}" + (f"; {where}" if where else "")


def results_of(cell):
    """The results bundles of a cell's outputs, in order (the payload dicts)."""
    return [out["data"][MIME] for out in cell.get("outputs", [])
            if out.get("output_type") in ("display_data", "execute_result") and MIME in out.get("data", {})]


def _runs(source):
    """:func:`~mha_course.notebook.parse_runs`, or ``None`` when the source cannot be read (a forged cell)."""
    try:
        return parse_runs(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def judge_cell(cell, answers):
    """``None`` or ``(ename, message)``: the verdict on one graded test cell's results."""
    verdict = _verdict(cell, answers)
    return None if verdict is None else verdict[:2]


def _verdict(cell, answers):
    """:func:`judge_cell`, with a third item: the name of the catalogue's diagnosis, or ``None``."""
    runs = _runs(cell["source"])
    if runs is None or any(question not in course_questions() for question, _ in runs):
        return "AssertionError", "this test cell is not one of the course's: restore it from the release", None
    bundles = results_of(cell)
    if len(bundles) != len(runs):
        return "AssertionError", (f"the test cell sent results for {len(bundles)} of its {len(runs)} check(s): "
                                  "did an earlier cell fail, or did the code print results of its own?"), None
    for (question, cases), bundle in zip(runs, bundles):
        if not isinstance(bundle, dict) or bundle.get("format") != FORMAT or bundle.get("question") != question:
            return "AssertionError", f"the results sent for {question!r} do not belong to this test: rerun the notebook", None
        failure = _first_failure(question, cases, bundle.get("results"), answers)
        if failure:
            return failure[1:]
    return None


def error_output(cell, ename, message):
    """The ``error`` output that says why ``cell`` scores zero, of the cell's own kind (a dict, or nbformat's node)."""
    output = {"output_type": "error", "ename": ename, "evalue": message,
              "traceback": [f"{ename}: {message}", "(judged by the grader, outside the notebook's kernel)"]}
    return output if type(cell) is dict else type(cell)(output)


def _warned(cell):
    texts = []
    for bundle in results_of(cell):
        texts += [text for text in warnings_of(bundle) if text not in texts]
    return texts


def answer_error(answer_cell):
    """``(ename, evalue)`` of an answer cell's first error, without the kernel's temporary file name; or ``None``."""
    error = first_error(answer_cell or {})
    return None if error is None else (error[0], without_file_name(error[1]))


def judge_notebook(nb):
    """Judge every graded test cell of an executed notebook in place; return the notebook.

    A failing test cell gets an ``error`` output first among its outputs (unless the kernel already
    reported an error there: it scores zero either way). Outputs that nbgrader would read as partial
    credit (``execute_result``) become plain ``display_data``: only the judge decides a score. The
    name of the catalogue's diagnosis of a failure, if the judge found one, is kept in the cell's
    metadata (:func:`~mha_course.notebook.set_diagnosis`), where error carried forward reads it.
    """
    answers, owner = {}, None
    for cell in nb.cells:
        if is_answer(cell):
            answers[meta(cell).get("grade_id")] = cell.get("source", "")
            owner = cell
        if not is_test(cell):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "execute_result":
                out["output_type"] = "display_data"
                out.pop("execution_count", None)
        set_diagnosis(cell, None)  # nothing a submission brought along survives
        if _runs(cell["source"]) == []:
            continue  # not in the judge's format: nbgrader scores it as it ran
        verdict = _verdict(cell, answers)
        set_diagnosis(cell, verdict[2] if verdict is not None else None)
        if verdict is not None and verdict[0] == "NameError" and answer_error(owner):
            ename, evalue = answer_error(owner)
            verdict = ename, f"the answer cell above failed: {evalue}", None  # shown as "SyntaxError: the answer ..."
        if verdict is not None and not first_error(cell):
            cell.setdefault("outputs", []).insert(0, error_output(cell, *verdict[:2]))
        if _warned(cell):
            add_note(cell, warning_note(_warned(cell)))
    return nb
