"""What a test cell wrote to stderr is a note, not a failure: :class:`StderrNotes` and :func:`stderr_to_notes`.

nbgrader scores a graded cell that wrote anything to stderr as 0 (``determine_grade``). In this
course the judge decides a test cell's score: a ``logging.warning`` or a debug ``print(...,
file=sys.stderr)`` left in a right answer writes to stderr while a test calls it, and costs
nothing, as a warning costs nothing. ``nbgrader_config.py`` puts :class:`StderrNotes` right after
the judge (``JudgeCells``): in every graded test cell, what went to stderr is shown as ordinary
output and its first line becomes a note of the cell (:func:`mha_course.notebook.add_note`). An
error output (the judge's verdict, an exception) still scores 0. ``mha_course.check`` does the same
before it reads its verdicts.
"""
from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ..notebook import add_note, is_test, one_line


def stderr_note(text):
    """The one-line note of a test cell whose run wrote ``text`` to stderr."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    first = one_line(lines[0], 200) if lines else ""
    return (f"Your code wrote to stderr ({first}); the test judged its results as they are, and output "
            "costs no points.")


def stderr_to_notes(nb):
    """In every graded test cell of ``nb``: stderr output becomes stdout, and a note says so. Returns ``nb``."""
    for cell in nb.cells:
        if not is_test(cell):
            continue
        written = [out for out in cell.get("outputs", []) if out.get("output_type") == "stream"
                   and out.get("name") == "stderr"]
        for out in written:
            out["name"] = "stdout"
        if written:
            add_note(cell, stderr_note("".join(str(out.get("text", "")) for out in written)))
    return nb


class StderrNotes(Preprocessor):
    """nbgrader autograde step, right after the judge: stderr in a test cell is a note (:func:`stderr_to_notes`)."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        return stderr_to_notes(nb), resources
