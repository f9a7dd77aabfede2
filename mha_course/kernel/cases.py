"""The kernel side of the judge: call the learner's code on a test cell's cases, send back plain data.

A test cell of the exercises reads::

    def _call(name, s, bits):  # turns one literal case into a call of the learner's function
        cfg = mk.PRESETS[name]
        return kv_bytes_read(cfg.num_kv_heads, cfg.head_dim, s, bits)

    run("kv_bytes_read", _call, ("llama-3-70b", 8192, 16))

:func:`run` calls ``_call(*case)`` for every case and, when graded, displays ONE output of mime type
:data:`~mha_course.wire.MIME` holding the question id, the results encoded as plain data and
the warnings the learner's code raised (:mod:`mha_course.wire`). The grading process
(:mod:`mha_course.judge.core`) compares the results with ``mha_kit``'s reference: expected values
never enter the kernel, so nothing the kernel does can make a wrong answer right.

A warning raised inside the learner's code (numpy's "divide by zero encountered in log" for
``np.log(mask)``, say) is caught here, never printed to stderr, where nbgrader would zero the test
cell: it becomes a note of the test, and costs nothing.

In a learner's own environment (the full course installed, not the grading kernel's graded kit,
and not under ``nbgrader autograde``) :func:`run` judges at once instead: it prints nothing when
every case passes and raises ``AssertionError`` with the one-line reason (or re-raises the
learner's own exception), so that running a cell, nbgrader's Validate and
``python -m mha_course.check`` give instant feedback.

The grading kernel's graded kit (:mod:`mha_course.plugins.graded_kit`) copies this folder, ``kernel/``,
and :mod:`mha_course.wire` as they are, and no judge: the judge is imported where it is there, the
learner's own environment (:func:`_inline_judge`).
"""
from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import NamedTuple, Optional

from ..wire import (FORMAT, MAX_TEXT, MAX_WARNINGS, MIME, encode, encode_error, type_name, warning_note,
                    without_file_name)
from ..wire import config  # noqa: F401 (a test cell imports it from here, with run)


class Outcome(NamedTuple):
    """What the learner's code did on one case."""

    data: dict  # the encoded result, or the encoded error
    error: Optional[BaseException]  # the exception it raised, if any
    warnings: list  # "Category: message" of each warning it raised


def _call_one(call, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every warning is recorded, none printed to stderr
        try:
            result = call(*args)
        except Exception as error:  # the learner's error belongs to this case only
            return Outcome(encode_error(error, where(error)), error, _texts(caught))
    return Outcome(encode(result), None, _texts(caught))


def _library_roots():
    """Folders whose code is not the learner's: the import path (numpy, mha_kit) and the course's own."""
    course = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folders = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)] + [course]
    return tuple(os.path.join(folder, "") for folder in folders)


def where(error):
    """``"line 17, in expected_tokens"``: the deepest line of the learner's own code (a notebook cell) in
    ``error``'s traceback, or ``None`` when it has none (an error raised by a library alone)."""
    roots = _library_roots()
    try:
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if not os.path.abspath(f.filename).startswith(roots) and not f.filename.startswith("<frozen")]
    except Exception:  # a traceback that cannot be read: say nothing rather than fail the case
        return None
    return f"line {frames[-1].lineno}, in {frames[-1].name}" if frames else None


def _texts(caught):
    texts = []
    for item in caught:
        text = f"{getattr(item.category, '__name__', 'Warning')}: {item.message}"[:MAX_TEXT]
        texts += [text] if text not in texts else []
    return texts


def call_all(call, cases):
    """``[Outcome]``: ``call(*case)`` for every case, errors and warnings kept per case."""
    __tracebackhide__ = True  # IPython: a learner's error shows their code, not this function
    return [_call_one(call, case if type(case) is tuple else (case,)) for case in cases]


def _warned(outcomes):
    texts = []
    for outcome in outcomes:
        texts += [text for text in outcome.warnings if text not in texts]
    return texts[:MAX_WARNINGS]


def _inline_judge():
    """The judge, when this is the learner's own environment; else None (graded: the judge is outside)."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return None  # grading: only the process outside the kernel judges
    try:
        from ..judge import core, hints
    except ImportError:  # the grading kernel's graded kit holds no judge
        return None
    return core.first_failure, hints, core.raised_note


def run(question, call, *cases):
    """Call ``call(*case)`` for each case and send the encoded results to the judge.

    Parameters
    ----------
    question : str
        The question id the judge knows (``"kv_bytes_read"``).
    call : callable
        Turns one case's literal arguments into a call of the learner's code.
    *cases : tuple or literal
        The arguments of each call (a tuple), literals only: the judge reads them from the
        test cell's source.
    """
    __tracebackhide__ = True  # IPython: the learner sees the reason, not this function
    from IPython.display import display

    outcomes = call_all(call, cases)
    encoded, warned = [o.data for o in outcomes], _warned(outcomes)
    judge = _inline_judge()
    if judge is None:  # graded: the judge outside the kernel reads the results from this output
        payload = {"format": FORMAT, "question": question, "results": encoded, "warnings": warned}
        display({MIME: payload, "text/plain": f"[{question}: results sent to the grader]"}, raw=True)
        return
    if warned:
        print(warning_note(warned))
    first_failure, hints, raised_note = judge
    failure = first_failure(question, cases, encoded)
    (_failed_questions.add if failure is not None else _failed_questions.discard)(question)
    if failure is not None:
        index, _, message = failure
        error = outcomes[index].error
        reason = _learner_error_reason(error, question, hints)
        if error is not None and reason is None:
            if hasattr(error, "add_note"):  # Python 3.11: the traceback ends with the case and the line
                error.add_note(f"{CASE_NOTE} {raised_note(question, cases[index], where(error))}")
            raise error  # the learner's own error, with its traceback into their code
        _show_in_one_line()
        raise AssertionError(_with_dependency_hint(reason or message, hints.dependency_hint(question, _failed_questions))) from None


#: Opens the note added to a learner's own error (inline): the test's case, and the line that raised it.
CASE_NOTE = "In this test:"

#: Inline only: the questions whose last run in this kernel failed (a dependency's verdict, for the hint).
_failed_questions = set()


def _with_dependency_hint(reason, hint):
    """Inline: ``reason`` (this answer's own fault first), then ``hint``: the earlier answers this question
    runs that failed their own tests in this kernel (none when they pass)."""
    if not hint or "an earlier answer" in reason or reason.startswith("not answered yet"):
        return reason  # a blank answer fails on its own: an earlier answer's failure is no news (issue 36)
    return f"{reason}; {hint}"


#: ``(ename, evalue)`` of the error of the last cell that finished running, or None (inline only): while
#: a test cell runs, that is the cell run before it.
_previous_cell_error = [None]


def _remember_cell_error(result):
    """IPython ``post_run_cell`` hook: keep the error of each cell, for the test cell run after it."""
    error = result.error_before_exec or result.error_in_exec
    _previous_cell_error[0] = None if error is None else (type_name(error).rpartition(".")[2],
                                                          without_file_name(str(error))[:MAX_TEXT])


def _watch_cells():
    """Inline only: remember each cell's error, so that a test can blame the answer cell that failed."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and _remember_cell_error not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _remember_cell_error)


def _learner_error_reason(error, question, hints):
    """The one-line reason for a learner's error that is not about this test (inline), else None.

    A blank answer (the release's ``raise NotImplementedError()``) is "not answered yet" (naming the
    earlier answer when the blank one is an earlier answer this question runs); a ``NameError``
    right after a cell that failed (a ``SyntaxError`` or a ``raise`` in the answer cell, so its
    function was never defined) names that cell's error.
    """
    if isinstance(error, NotImplementedError):
        earlier = hints.blank_dependency(question, error)
        if earlier:
            return f"not answered yet: your {earlier}, an earlier answer, still raises NotImplementedError"
        return "not answered yet (the answer cell still raises NotImplementedError)"
    previous = _previous_cell_error[0]
    if isinstance(error, NameError) and previous is not None:
        return f"the cell run before this test failed with {previous[0]}: {previous[1]} (fix it and run it again)"
    return None


class AssertionError(AssertionError):  # noqa: A001 (same name: IPython and nbgrader report "AssertionError")
    """A failed case, judged at once in the learner's own environment; shown as one line."""


def _one_line(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler: the reason, without a traceback through this module."""
    shell._showtraceback(etype, value, [f"AssertionError: {value}"])


def _show_in_one_line():
    """Let IPython show this module's :class:`AssertionError` as its one-line reason."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and AssertionError not in (shell.custom_exceptions or ()):
        shell.set_custom_exc((AssertionError,), _one_line)


if _inline_judge() is not None:
    _watch_cells()
