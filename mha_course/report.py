"""Small helpers shared by the learner's commands: read test cells and their one-line errors."""
from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def first_line(source):
    """The one-line docstring that opens a test cell (or its first line)."""
    line = source.strip().splitlines()[0] if source.strip() else ""
    return line.strip().strip('"').strip("'").strip()


def last_error_line(text):
    """``"AssertionError: ..."`` from a traceback, colours removed."""
    lines = [line for line in _ANSI.sub("", text).splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def explain(error_line):
    """Say what an unanswered question looks like, in the learner's words."""
    if error_line.startswith("NotImplementedError"):
        return "not answered yet (the answer cell still raises NotImplementedError)"
    return error_line
