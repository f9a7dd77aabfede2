"""How a test cell's results travel from the kernel to the judge: plain data, as JSON.

:func:`run <mha_course.kernel.cases.run>` displays, per ``run`` call, ONE output of mime type
:data:`MIME`: ``{"format": FORMAT, "question": id, "results": [...], "warnings": [...]}``, one
encoded result per case (:func:`encode`) and the warnings the learner's code raised. Ints,
floats, bools, strings, None, tuples, lists, dicts, sets and numeric numpy arrays (dtype, shape,
bytes) travel as themselves; anything else (an int subclass, an object whose ``__eq__`` says yes,
a masked array) as ``{"kind": "other", "type": ...}``; an exception of the learner's code as
``{"kind": "error", "ename": ..., "evalue": ...}``. The judge reads them back with :func:`decode`,
which trusts nothing it is sent.

Both sides import this module: it goes into the grading kernel's graded kit as it is, so it
imports nothing that holds a reference answer. A case names an ``mha_kit`` config the same way on
both sides too (:func:`config`).
"""
from __future__ import annotations

import base64
import math
import re

import numpy as np

import mha_kit as mk

#: Mime type of the results a test cell sends to the judge.
MIME = "application/vnd.mha-course.results+json"
#: Version of the encoding, checked by the judge.
FORMAT = 1
#: numpy dtype kinds sent as arrays: bool, signed and unsigned ints, floats, complex.
ARRAY_KINDS = "biufc"
#: Nesting deeper than this is not plain data (the judge refuses it too).
MAX_DEPTH = 8
#: Characters kept of an error message or a warning.
MAX_TEXT = 500
#: Distinct warnings kept of one ``run`` call.
MAX_WARNINGS = 3
#: Largest array the judge decodes (bytes); bigger answers fail their case.
MAX_ARRAY_BYTES = 64 * 2**20


def type_name(value):
    """``module.QualifiedName`` of ``value``'s type, read without calling anything the type overrides."""
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
    return {"kind": "other", "type": type_name(value)}


def encode_error(error, where=None):
    """``{"kind": "error", "ename", "evalue", "where"}`` of an exception raised by the learner's code.

    ``where`` says where in the learner's code it was raised (``"line 17, in expected_tokens"``), or is
    ``None`` when no frame of theirs is known.
    """
    try:
        text = str(error)
    except Exception:  # a message that cannot be printed
        text = "(an error whose message cannot be read)"
    text = text if type(text) is str else "(an error whose message is not text)"
    return {"kind": "error", "ename": type_name(error).rpartition(".")[2], "evalue": text[:MAX_TEXT],
            "where": where[:MAX_TEXT] if type(where) is str else None}


def warning_note(warnings):
    """The one-line note of a test whose cases made the learner's code warn: it costs nothing."""
    return (f"Your code warned ({'; '.join(warnings)}); the test judged its results as they are, and a "
            "warning costs no points.")


class NotPlain:
    """A result the kernel could not send as plain data (``what`` names what it was)."""

    def __init__(self, what):
        self.what = what


class LearnerError:
    """An exception the learner's code raised for one case (``where``: the line of their code, or None)."""

    def __init__(self, ename, evalue, where=None):
        self.ename, self.evalue, self.where = ename, evalue, where


def _text(value, default="?"):
    return value[:MAX_TEXT] if type(value) is str else default


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
        where = data.get("where")
        return LearnerError(_text(data.get("ename"), "Exception"), _text(data.get("evalue"), ""),
                            _text(where) if type(where) is str else None)
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


def warnings_of(bundle):
    """The warnings a results bundle reports, as sent (at most :data:`MAX_WARNINGS` strings), else ``[]``."""
    sent = bundle.get("warnings") if isinstance(bundle, dict) else None
    if type(sent) is not list:
        return []
    return [_text(w) for w in sent if type(w) is str][:MAX_WARNINGS]


#: The file a syntax error quotes (``(/tmp/ipykernel_812/3141.py, line 2)``): the kernel's temporary file.
_FILE_AND_LINE = re.compile(r" \((?:[^()]*[/\\])?[^()/\\]+, line (\d+)\)$")


def without_file_name(text):
    """``text`` of an error with the temporary file name it may quote left out: ``(line 2)`` stays."""
    return _FILE_AND_LINE.sub(r" (line \1)", text)


def config(spec):
    """The ``mha_kit`` config a case names: a preset name, or a dict of config fields.

    ``"llama-3-70b"`` is ``mk.PRESETS["llama-3-70b"]``; ``{"d_model": 6, "num_heads": 2,
    "num_kv_heads": 1, "num_layers": 5}`` is an ``mk.AttentionConfig`` (a ``kv_lora_rank`` field
    makes it an ``mk.LatentAttentionConfig``). The kernel and the judge build the same config.
    """
    if type(spec) is str:
        return mk.PRESETS[spec]
    fields = dict(spec)
    return mk.LatentAttentionConfig(**fields) if "kv_lora_rank" in fields else mk.AttentionConfig(**fields)
