"""Kernel side: arrays handed to the learner's code that record the calls which copy them.

04's Q5 asks for grouped-query attention *without* copying K and V once per query head. Its test
hands ``grouped_attention`` K and V made by :func:`watched`: they behave as plain arrays, but a call
that builds copies of them (``np.repeat``, ``np.tile``, ``np.stack``, an index array such as
``k[[0, 0, 1, 1]]``, a reshape that cannot be a view, as of a broadcast ``k`` ...) is recorded, and the test sends what was recorded with the
result (:func:`copies`), so the learner's own run names the copy at once::

    k, v = watched(k, v)
    return grouped_attention(q, k, v), copies(k, v)

Views stay watched (``k.transpose(0, 2, 1)``, ``k[j]``, ``k[:, None]``, ``np.swapaxes(k, 1, 2)``,
``np.broadcast_to(k[:, None], (h_kv, g, s, d_h))``, which repeats nothing in memory);
anything computed from them (a product, ``np.einsum``, a softmax) is a plain array, so an honest
answer (a reshape of the queries, a loop over heads, broadcasting in a product) records nothing.
What is sent is a hint for the learner, not a proof: when graded, the judge also reads the answer's
code (``no_copies`` in that exercise's ``grading_questions.py``).

Copied as it is into the grading kernel's graded kit; imports numpy only. Book: chapter "Exercises".
"""
from __future__ import annotations

import numpy as np

#: numpy functions that build a new array out of copies of their input: recorded by name.
COPYING = frozenset({"repeat", "tile", "take", "kron", "stack", "concatenate", "vstack", "hstack",
                     "dstack", "column_stack", "block", "append", "resize"})
#: What is recorded for an index array (or a list) into a watched array.
INDEX_ARRAY = "an index array"
#: What is recorded for a reshape that had to copy (a broadcast array's group axis merged into the heads).
RESHAPE_COPY = "a reshape that copies"
#: numpy functions that return a view of their input: the view stays watched (``reshape`` only when it
#: can be one: :meth:`Watched.reshape`).
VIEWS = frozenset({"transpose", "swapaxes", "moveaxis", "rollaxis", "expand_dims", "squeeze", "reshape",
                   "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d"})


class Watched(np.ndarray):
    """A plain array whose copies are recorded in ``record`` (a list shared with its views)."""

    def __array_finalize__(self, obj):
        self.record = getattr(obj, "record", None)  # a view shares the record of the array it views

    def __array_function__(self, func, types, args, kwargs):
        name = getattr(func, "__name__", "")
        if name in COPYING:
            _note(self, name)
        if name in VIEWS:
            if name == "broadcast_to":  # numpy returns a base-class view unless asked to keep the subclass
                kwargs = {**kwargs, "subok": True}
            return super().__array_function__(func, types, args, kwargs)
        return func(*_plain(args), **_plain(kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))  # a product, exp ...: a plain result

    def __getitem__(self, index):
        parts = index if type(index) is tuple else (index,)
        if any(isinstance(part, list) or (isinstance(part, np.ndarray) and part.ndim > 0) for part in parts):
            _note(self, INDEX_ARRAY)
            return self.view(np.ndarray)[_plain(index)]
        return super().__getitem__(index)

    def repeat(self, *args, **kwargs):
        _note(self, "repeat")
        return self.view(np.ndarray).repeat(*args, **kwargs)

    def reshape(self, *args, **kwargs):
        out = super().reshape(*args, **kwargs)
        if out.size and not np.may_share_memory(out, self):  # no view has these strides: numpy copied
            _note(self, RESHAPE_COPY)
        return out

    def take(self, *args, **kwargs):
        _note(self, "take")
        return self.view(np.ndarray).take(*args, **kwargs)

    def dot(self, *args, **kwargs):
        return self.view(np.ndarray).dot(*_plain(args), **_plain(kwargs))


def _note(array, name):
    if array.record is not None and name not in array.record:
        array.record.append(name)


def _plain(value):
    """``value`` with every :class:`Watched` array (in tuples, lists and dicts too) seen as a plain array."""
    if isinstance(value, Watched):
        return value.view(np.ndarray)
    if type(value) in (tuple, list):
        return type(value)(_plain(item) for item in value)
    if type(value) is dict:
        return {key: _plain(item) for key, item in value.items()}
    return value


def watched(*arrays):
    """The ``arrays`` as :class:`Watched` views sharing one record (a tuple, one per array)."""
    record = []
    views = tuple(np.asarray(a).view(Watched) for a in arrays)
    for view in views:
        view.record = record
    return views


def copies(*arrays):
    """What was recorded on the watched ``arrays``: a sorted list of names (``["repeat"]``), ``[]`` for none."""
    return sorted({name for a in arrays for name in (getattr(a, "record", None) or ())})
