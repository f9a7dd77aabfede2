"""The course's notebooks, read in one place: questions, answers, test cells, failures, notes, flags.

An exercise notebook follows the conventions ``tests/test_exercises_format.py`` checks:

* its introduction opens with ``# Exercise k: Title`` and names its chapters (``Chapter(s): "..."``);
* a question is a markdown heading ``## Qk [E] · p points: what it asks`` (tag E, M or H);
* under a question come its answer cells (nbgrader ``solution`` cells, grade_id ``<name>_answer``)
  and test cells (nbgrader ``grade`` cells with ``points``); a test cell tests the answer above it;
* a test cell only calls ``run(question_id, _call, *literal cases)`` (:func:`parse_runs`).

Once graded, a test cell that scores zero has an error output (what it wrote to stderr is a note):
:func:`failure` says why in one line. What grading adds for a person travels in the notebook:
*notes* on a test cell (one line that changes no score: an error carried forward, a warning the
learner's code raised) and *flags* on the notebook (what a person should look at), both in the
metadata under :data:`KEY`, where the learner's code cannot write.

Book: chapters "Exercises" and "Instructor's guide".
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass


#: A question's heading: number, difficulty tag, points, and what it asks.
HEADING = re.compile(r"^## (Q(\d+) \[([EMH])\] · (\d+) points?: (.+))$", re.M)
#: Where the course keeps what grading adds: ``cell.metadata[KEY]["notes"]``, ``nb.metadata[KEY]["flags"]``.
KEY = "mha_course"
#: A notebook larger than this is not read (exercise notebooks are well under 1 MiB).
MAX_BYTES = 20 * 1024**2


def meta(cell):
    """The cell's nbgrader metadata; ``{}`` when the file holds anything but a dict there."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return nbgrader if isinstance(nbgrader, dict) else {}


def grade_id(cell):
    """The cell's nbgrader ``grade_id``, or ``None`` (none, or not a string)."""
    value = meta(cell).get("grade_id")
    return value if isinstance(value, str) else None


def is_answer(cell):
    """An answer cell: what the learner writes (nbgrader's ``solution`` cell)."""
    return bool(meta(cell).get("solution"))


def is_test(cell):
    """A test cell: a graded code cell that is not an answer."""
    return bool(meta(cell).get("grade")) and not is_answer(cell) and cell.get("cell_type") == "code"


@dataclass(frozen=True)
class Question:
    """One ``## Qk`` question of a notebook and the cells under it, by grade_id."""

    heading: str  # "Q1 [E] · 2 points: a stable softmax"
    tag: str  # difficulty: "E", "M" or "H"
    points: int  # what the heading promises
    answers: tuple  # grade_ids of its answer cells
    tests: tuple  # grade_ids of its test cells

    @property
    def label(self):
        """``"Q1 (softmax)"``: the number and the answers' names, as the self-grader prints it."""
        names = ", ".join(answer.removesuffix("_answer") for answer in self.answers)
        return f"{self.heading.split()[0]} ({names})"


def questions(nb):
    """The notebook's :class:`Question` list, in order (cells before the first heading belong to none)."""
    found = []
    for cell in nb.cells:
        match = HEADING.match(cell.source) if cell.cell_type == "markdown" else None
        if match:
            found.append([match.group(1), match.group(3), int(match.group(4)), [], []])
        elif found and (is_answer(cell) or is_test(cell)):
            found[-1][3 if is_answer(cell) else 4].append(grade_id(cell))
    return [Question(heading, tag, points, tuple(answers), tuple(tests))
            for heading, tag, points, answers, tests in found]


def about(nb):
    """``(title, chapters)`` from the introduction: ``# Exercise k: Title`` and its ``Chapter(s): "..."``."""
    intro = nb.cells[0].source
    title = intro.splitlines()[0].split(": ", 1)[1]
    (line,) = [" ".join(p.split()) for p in intro.split("\n\n") if re.search(r"Chapters?:\s", p)]
    return title, re.findall(r'"([^"]+)"', re.split(r"Chapters?: ", line, maxsplit=1)[1])


def answers(nb):
    """``{answer grade_id: source}``, in notebook order."""
    return {grade_id(c): c.source for c in nb.cells if is_answer(c) and grade_id(c)}


def points(nb):
    """``{test grade_id: points}``, in notebook order."""
    return {grade_id(c): float(meta(c)["points"]) for c in nb.cells if is_test(c)}


def test_cells(nb):
    """``{answer grade_id: [indices of its test cells]}``: the test cells after an answer, up to the next answer."""
    owner, found = None, {}
    for index, cell in enumerate(nb.cells):
        if is_answer(cell):
            owner = grade_id(cell)
            found.setdefault(owner, [])
        elif is_test(cell) and owner is not None:
            found[owner].append(index)
    return found


def tests_of(nb):
    """``{answer grade_id: [test grade_ids]}``, from :func:`test_cells`."""
    return {answer: [grade_id(nb.cells[i]) for i in indices] for answer, indices in test_cells(nb).items()}


def parse_runs(source):
    """``[(question id, [case, ...])]`` of the top-level ``run(...)`` calls of a test cell's source.

    Only literal cases are allowed (``ast.literal_eval``); anything else is a course bug and raises
    ``ValueError``.
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


def first_line(source):
    """The one-line docstring that opens a test cell (or its first line)."""
    line = source.strip().splitlines()[0] if source.strip() else ""
    return line.strip().strip('"').strip("'").strip()


def one_line(text, limit=500):
    """``text`` on one line (a newline in a file name cannot start a row of a report), cut to ``limit``."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def explain(error_line):
    """Say what an unanswered question looks like, in the learner's words."""
    if error_line.startswith("NotImplementedError"):
        return "not answered yet (the answer cell still raises NotImplementedError)"
    return error_line


def _text(value, default):
    return value[:500] if type(value) is str else default


def first_error(cell):
    """``(ename, evalue)`` of the cell's first error output (the judge puts its verdict first), or ``None``."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return _text(out.get("ename"), "Exception"), _text(out.get("evalue"), "")
    return None


def failure(cell):
    """Why a graded cell scores zero, in one line; ``None`` when it does not fail.

    An error output (the judge's verdict, an exception). What a test cell wrote to stderr is a note,
    never a failure (:mod:`mha_course.plugins.streams` takes it out of nbgrader's rule).
    """
    error = first_error(cell)
    if error:
        return explain(one_line(f"{error[0]}: {error[1]}"))
    return None


def add_note(cell, line):
    """Give a test cell a note (``line``, no score changed): shown as its output, kept in its metadata."""
    output = {"output_type": "stream", "name": "stdout", "text": line + "\n"}
    # of the cell's own kind: a plain dict, or the node type of a notebook read by nbformat
    cell.setdefault("outputs", []).append(output if type(cell) is dict else type(cell)(output))
    cell.setdefault("metadata", {}).setdefault(KEY, {}).setdefault("notes", []).append(line)


def notes_of(cell):
    """The notes grading gave a cell (:func:`add_note`)."""
    notes = cell.get("metadata", {}).get(KEY, {}).get("notes", [])
    return [n for n in notes if type(n) is str] if isinstance(notes, list) else []


def set_diagnosis(cell, name):
    """Keep in a judged test cell's metadata the catalogue's diagnosis of its failure (``None``: none).

    Written by the judge, in the grading process, on every cell it judges (so nothing a submission
    brought along survives), and read by error carried forward (:func:`diagnosis_of`).
    """
    metadata = cell.setdefault("metadata", {})
    record = metadata.get(KEY)
    if isinstance(record, dict):
        record.pop("diagnosis", None)
    if name is not None:
        if not isinstance(record, dict):
            record = metadata[KEY] = type(metadata)()  # a NotebookNode in a notebook nbformat read
        record["diagnosis"] = name


def diagnosis_of(cell):
    """The name :func:`set_diagnosis` kept on ``cell``, or ``None``."""
    record = cell.get("metadata", {}).get(KEY)
    name = record.get("diagnosis") if isinstance(record, dict) else None
    return name if type(name) is str else None


def flags_of(nb):
    """The ``[severity, text]`` flags recorded in ``nb``'s metadata (``severity``: ``"review"`` or ``"info"``)."""
    return [list(f) for f in nb.metadata.get(KEY, {}).get("flags", [])]


def add_flags(nb, flags):
    """Append ``flags`` to ``nb``'s metadata, each once."""
    known = flags_of(nb)
    nb.metadata.setdefault(KEY, {})["flags"] = known + [list(f) for f in flags if list(f) not in known]
