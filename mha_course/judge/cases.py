"""The kernel side of the judge: call the learner's code on a test cell's cases, send back plain data.

A test cell of the exercises reads::

    def _call(name, s, bits):  # turns one literal case into a call of the learner's function
        cfg = mk.PRESETS[name]
        return kv_bytes_read(cfg.num_kv_heads, cfg.head_dim, s, bits)

    run("kv_bytes_read", _call, ("llama-3-70b", 8192, 16))

:func:`run` calls ``_call(*case)`` for every case and, when graded, displays ONE output of mime type
:data:`MIME` holding the question id and, per case, the result encoded as plain data
(:func:`encode`): ints, floats, bools, strings, None, tuples, lists, dicts, sets and numeric numpy
arrays (dtype, shape, bytes). Anything else (an int subclass, an object whose ``__eq__`` says
yes, a masked array) is sent as ``{"kind": "other", "type": ...}``; an exception raised by the
learner's code is sent as ``{"kind": "error", "ename": ..., "evalue": ...}``. The grading
process (:mod:`mha_course.judge.core`) compares the results with ``mha_kit``'s reference:
expected values never enter the kernel, so nothing the kernel does can make a wrong answer right.

In a learner's own environment (the full course installed, not the grading kernel's learner
edition, and not under ``nbgrader autograde``) :func:`run` judges at once instead: it prints
nothing when every case passes and raises ``AssertionError`` with the one-line reason (or
re-raises the learner's own exception), so that running a cell, nbgrader's Validate and
``python -m mha_course.check`` give instant feedback.

This module imports nothing that holds a reference answer: it is copied as it is into the
grading kernel's learner edition (:mod:`mha_course.learner_edition`).
"""
from __future__ import annotations

import base64
import os
import re

import numpy as np

#: Mime type of the results a test cell sends to the judge.
MIME = "application/vnd.mha-course.results+json"
#: Version of the encoding, checked by the judge.
FORMAT = 1
#: numpy dtype kinds sent as arrays: bool, signed and unsigned ints, floats, complex.
ARRAY_KINDS = "biufc"
#: Nesting deeper than this is not plain data (the judge refuses it too).
MAX_DEPTH = 8
#: Characters kept of an error message.
MAX_TEXT = 500


def _type_name(value):
    kind = type(value)
    try:
        module, name = type.__getattribute__(kind, "__module__"), type.__getattribute__(kind, "__qualname__")
        return f"{module}.{name}" if type(module) is str and type(name) is str else "an unnamed type"
    except Exception:  # a metaclass that refuses: still a type we do not take
        return "an unnamed type"


def _encode_array(value):
    if value.dtype.kind not in ARRAY_KINDS or value.dtype.fields is not None:
        return {"kind": "other", "type": f"numpy.ndarray of dtype {value.dtype.str}"}
    data = np.array(value, copy=True, order="C", subok=False)  # C order; 0-d stays 0-d
    return {"kind": "ndarray", "dtype": data.dtype.str, "shape": list(data.shape),
            "data": base64.b64encode(data.tobytes()).decode("ascii")}


def encode(value, depth=0):
    """Plain-data JSON encoding of one result; exact types only (``type(x) is int``, not isinstance)."""
    kind = type(value)
    if depth > MAX_DEPTH:
        return {"kind": "other", "type": f"data nested deeper than {MAX_DEPTH} levels"}
    if value is None or kind is bool:
        return {"kind": "const", "value": value}
    if kind is int:
        return {"kind": "int", "value": int.__repr__(value)}  # a string: JSON numbers lose big ints
    if kind is float:
        return {"kind": "float", "value": float.__repr__(value)}  # 'nan' and 'inf' included
    if kind is str:
        return {"kind": "str", "value": value}
    if kind in (tuple, list, set, frozenset):
        return {"kind": kind.__name__, "items": [encode(item, depth + 1) for item in kind.__iter__(value)]}
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):  # a namedtuple: its values, as a tuple
        return {"kind": "tuple", "items": [encode(item, depth + 1) for item in tuple.__iter__(value)]}
    if kind is dict:
        return {"kind": "dict", "items": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]}
    if kind is np.ndarray:
        return _encode_array(value)
    if isinstance(value, np.generic) and kind.__module__ == "numpy" and value.dtype.kind in ARRAY_KINDS:
        return {"kind": "numpy", "dtype": value.dtype.str, "value": _encode_array(np.asarray(value))}
    return {"kind": "other", "type": _type_name(value)}


def encode_error(error):
    """``{"kind": "error", "ename", "evalue"}`` of an exception raised by the learner's code."""
    try:
        text = str(error)
    except Exception:  # a message that cannot be printed
        text = "(an error whose message cannot be read)"
    text = text if type(text) is str else "(an error whose message is not text)"
    return {"kind": "error", "ename": _type_name(error).rpartition(".")[2], "evalue": text[:MAX_TEXT]}


def call_all(call, cases):
    """``[(encoded result, exception or None)]``: ``call(*case)`` for every case, errors kept per case."""
    __tracebackhide__ = True  # IPython: a learner's error shows their code, not this function
    out = []
    for case in cases:
        args = case if type(case) is tuple else (case,)
        try:
            result = call(*args)
        except Exception as error:  # the learner's error belongs to this case only
            out.append((encode_error(error), error))
        else:
            out.append((encode(result), None))
    return out


def _inline_judge():
    """The grading side's judge, when this is the learner's own full environment; else None."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return None  # grading: only the process outside the kernel judges
    try:
        from mha_course.judge.core import first_failure
    except ImportError:  # the grading kernel's learner edition holds no judge
        return None
    return first_failure


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

    results = call_all(call, cases)
    encoded = [data for data, _ in results]
    judge = _inline_judge()
    if judge is None:  # graded: the judge outside the kernel reads the results from this output
        payload = {"format": FORMAT, "question": question, "results": encoded}
        display({MIME: payload, "text/plain": f"[{question}: results sent to the grader]"}, raw=True)
        return
    failure = judge(question, cases, encoded)
    (_failed_questions.add if failure is not None else _failed_questions.discard)(question)
    if failure is not None:
        index, _, message = failure
        error = results[index][1]
        reason = _learner_error_reason(error, question)
        if error is not None and reason is None:
            raise error  # the learner's own error, with its traceback into their code
        _show_in_one_line()
        raise AssertionError(_with_dependency_hint(reason or message, question)) from None


#: Inline only: the questions whose last run in this kernel failed (a dependency's verdict, for the hint).
_failed_questions = set()


def _with_dependency_hint(reason, question):
    """Inline: ``reason`` (this answer's own fault first), then a pointer to the earlier answers this
    question runs that failed their own tests in this kernel; none when they pass."""
    from mha_course.judge.carry import dependency_hint

    hint = dependency_hint(question, _failed_questions)
    return f"{reason}; {hint}" if hint and "an earlier answer" not in reason else reason


#: ``(ename, evalue)`` of the error of the last cell that finished running, or None (inline only): while
#: a test cell runs, that is the cell run before it.
_previous_cell_error = [None]


#: The file a syntax error quotes (``(/tmp/ipykernel_812/3141.py, line 2)``): the kernel's temporary file.
_FILE_AND_LINE = re.compile(r" \((?:[^()]*[/\\])?[^()/\\]+, line (\d+)\)$")


def without_file_name(text):
    """``text`` of an error with the temporary file name it may quote left out: ``(line 2)`` stays."""
    return _FILE_AND_LINE.sub(r" (line \1)", text)


def _remember_cell_error(result):
    """IPython ``post_run_cell`` hook: keep the error of each cell, for the test cell run after it."""
    error = result.error_before_exec or result.error_in_exec
    _previous_cell_error[0] = None if error is None else (_type_name(error).rpartition(".")[2],
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


def _learner_error_reason(error, question=None):
    """The one-line reason for a learner's error that is not about this test (inline), else None.

    A blank answer (the release's ``raise NotImplementedError()``) is "not answered yet" (naming the
    earlier answer when the blank one is an earlier answer this question runs); a ``NameError``
    right after a cell that failed (a ``SyntaxError`` or a ``raise`` in the answer cell, so its
    function was never defined) names that cell's error.
    """
    if isinstance(error, NotImplementedError):
        from mha_course.judge.carry import blank_dependency

        earlier = blank_dependency(question, error)
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


def config(spec):
    """The ``mha_kit`` config a case names: a preset name, or a dict of config fields.

    ``"llama-3-70b"`` is ``mk.PRESETS["llama-3-70b"]``; ``{"d_model": 6, "num_heads": 2,
    "num_kv_heads": 1, "num_layers": 5}`` is an ``mk.AttentionConfig`` (a ``kv_lora_rank`` field
    makes it an ``mk.LatentAttentionConfig``). The kernel and the judge build the same config.
    """
    import mha_kit as mk

    if type(spec) is str:
        return mk.PRESETS[spec]
    fields = dict(spec)
    return mk.LatentAttentionConfig(**fields) if "kv_lora_rank" in fields else mk.AttentionConfig(**fields)


if _inline_judge() is not None:
    _watch_cells()
