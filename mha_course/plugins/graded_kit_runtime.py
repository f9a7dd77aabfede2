"""The rules of a graded kit's ``mha_kit``, at run time (copied there as ``mha_kit/_kit.py``).

A graded kit (:mod:`mha_course.plugins.graded_kit`) holds the helpers an assignment allows and,
in place of every other public function of ``mha_kit``, a stub that raises
:class:`NotAvailableError` naming the rule: ``mk.split_heads is not available in 01_shapes: it is
what Q3 asks you to write``. The messages are data, read from ``_kit.json`` beside this file.
"""
from __future__ import annotations

import json
from pathlib import Path

RULES = json.loads(Path(__file__).with_name("_kit.json").read_text())


class NotAvailableError(Exception):
    """A reference function of ``mha_kit`` that this assignment does not allow was used."""


def refusal(key):
    """The :class:`NotAvailableError` for ``key`` (``"attention.split_heads"``, ``"split_heads"``)."""
    return NotAvailableError(RULES["messages"][key])


def _stub(key, name):
    def refused(*args, **kwargs):
        raise refusal(key)

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = RULES["messages"][key]
    return refused


def stub(namespace, module, names):
    """Put a refusing stub under every name of ``names`` into a module's ``namespace``."""
    for name in names:
        namespace[name] = _stub(f"{module}.{name}", name)


def module_getattr(name):
    """``mha_kit.__getattr__``: a forbidden name raises its rule; an unknown one an AttributeError."""
    if name in RULES["refused"]:
        raise refusal(name)
    raise AttributeError(f"module 'mha_kit' has no attribute {name!r}")
