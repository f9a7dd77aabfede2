"""Check one exercise notebook against its visible tests: ``python -m mha_course.check NOTEBOOK``.

Runs the notebook from top to bottom in a fresh kernel, as nbgrader's Validate button does, and
prints one line per failing test cell: what it checks and what is wrong. Exits with 0 when every
visible test passes, 1 when one fails (or a test cell was edited), 2 on a usage error (no such file,
not a notebook). Unlike ``nbgrader validate``, whose exit code is 0 either way, it can gate a script
or a pre-commit hook. The tests are judged by the same judge as in grading
(:mod:`mha_course.judge`), here at once in the kernel; and as Validate runs with the full ``mha_kit``,
it also names every answer that calls a reference the grading kernel switches off
(:func:`reference_calls`), which would score 0 when graded. A setup cell that failed (a copy released
before the course moved a module, say) is named once, first, with its error, its line and what to do
(:func:`setup_failure`): every test cell after it fails with a ``NameError`` that says nothing of the cause.

Book: chapter "Exercises".
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
import warnings
from pathlib import Path

from nbgrader.validator import Validator
from traitlets.config import Config

from .kernel import numpy2
from .kernel.cases import CASE_NOTE
from .notebook import answers, explain, first_line, is_answer, is_test
from .plugins.api import assignment_of, load, prepare_environment
from .plugins.graded_kit import refused
from .plugins.streams import stderr_to_notes
from .wire import without_file_name

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _Validator(Validator):
    """nbgrader's Validator, with stderr in a test cell a note, as in grading (:mod:`mha_course.plugins.streams`)."""

    executed = None  #: the notebook as it ran (set by :meth:`_preprocess`)

    def _preprocess(self, nb):
        self.executed = stderr_to_notes(super()._preprocess(nb))
        return self.executed


def validate(notebook, timeout=60, ran=None):
    """nbgrader's ``Validator.validate`` result for ``notebook`` (a dict; empty when all pass).

    ``ran``, a list, receives the notebook as it ran (nothing when it never ran: a cell of another type).
    """
    prepare_environment()
    config = Config()
    config.Execute.timeout = timeout
    validator = _Validator(config=config)
    results = validator.validate(str(Path(notebook).resolve()))
    if ran is not None and validator.executed is not None:
        ran.append(validator.executed)
    return results


#: The modules a test cell's ``run`` and ``config`` came from in older releases, and where they are now.
MOVED = {"mha_course.judge.cases": "mha_course.kernel.cases"}

_CELL_LINE = re.compile(r"^Cell In\[\d*\], line (\d+)", re.MULTILINE)


def setup_failure(nb):
    """The one-line report of a setup cell that failed, or ``None``.

    A setup cell is a code cell before the first answer or test cell (the imports): when it fails, every test
    cell fails with ``NameError: name 'run' is not defined``, which says nothing of the cause. The line names
    the cell's error and its line, and, for an import of a module the course moved (:data:`MOVED`), what to do.
    """
    for cell in nb.cells if nb is not None else ():
        if is_answer(cell) or is_test(cell):
            return None
        error = next((out for out in cell.get("outputs", []) if out.get("output_type") == "error"), None)
        if cell.cell_type != "code" or error is None:
            continue
        evalue = without_file_name(str(error.get("evalue", "")))
        line = _CELL_LINE.search(_ANSI.sub("", "\n".join(error.get("traceback", []))))
        where = f" (line {line.group(1)})" if line and "(line " not in evalue else ""
        text = f"the setup cell failed with {error.get('ename', 'an error')}: {evalue}{where}"
        moved = next((new for old, new in MOVED.items() if f"'{old}'" in evalue), None)
        if moved:
            return (f"{text}: this copy predates the course's update: download the current release, or change the "
                    f"import to {moved}")
        return f"{text}: fix it and run the notebook again"
    return None


def numpy2_names(notebook):
    """``[(answer grade_id, line)]``: answers that use a numpy 1.x name numpy 2 removed (:mod:`mha_course.kernel.numpy2`)."""
    nb, _ = load(notebook)
    return [(grade_id, numpy2.message(name)) for grade_id, source in (answers(nb).items() if nb is not None else ())
            for name in numpy2.uses(source)]


def _root(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def reference_calls(notebook, assignment):
    """``[(answer grade_id, rule)]``: answer cells that use an ``mha_kit`` reference switched off in grading.

    Validate runs the notebook with the full ``mha_kit``, so a call to ``mk.split_heads`` passes
    there and fails when graded (the grading kernel has the assignment's graded kit, see
    :mod:`mha_course.plugins.graded_kit`); this reads the answers with ``ast`` to say so now.
    """
    (nb, _), rules, hits = load(notebook), refused(assignment), []
    for grade_id, source in answers(nb).items() if nb is not None else ():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # Validate reports it
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _root(n) in ("mk", "mha_kit")}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("mha_kit")
                  for a in n.names}
        hits += [(grade_id, rules[name]) for name in sorted(names & set(rules))]
    return hits


def last_error_line(text):
    """``"AssertionError: ..."`` from a traceback, colours removed.

    When the learner's own error carries the test's note (:data:`mha_course.kernel.cases.CASE_NOTE`: the
    case, and the line of their code that raised it), the error line with the note in brackets.
    """
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    if len(lines) >= 2 and lines[-1].startswith(CASE_NOTE):
        return f"{lines[-2]} ({lines[-1].removeprefix(CASE_NOTE).strip()})"
    return lines[-1] if lines else ""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mha_course.check", description=__doc__.splitlines()[0])
    parser.add_argument("notebook", help="an exercise notebook, e.g. exercises/03_kv_cache/03_kv_cache.ipynb")
    parser.add_argument("--timeout", type=int, default=60, help="seconds a cell may run (default 60)")
    args = parser.parse_args(argv)
    if not Path(args.notebook).is_file():
        parser.error(f"no such notebook: {args.notebook}")
    try:
        assignment = assignment_of(args.notebook)
    except ValueError as error:
        parser.error(str(error))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own deprecation notices are not the learner's concern
        ran = []
        results = validate(args.notebook, args.timeout, ran)
    setup = setup_failure(ran[0] if ran else None)
    if setup:
        print(f"SETUP FAILED: {setup}")
        results.setdefault("setup", []).append(setup)
    for grade_id, rule in reference_calls(args.notebook, assignment) if assignment else ():
        print(f"NOT ALLOWED: {rule} (in {grade_id}; it scores 0 when graded)")
        results.setdefault("reference", []).append(grade_id)
    for grade_id, line in numpy2_names(args.notebook):  # graded as written, with a note: a warning, not a failure
        print(f"NUMPY 2: {line} (in {grade_id})")
    for cell in results.get("type_changed", []):
        print(f"CHANGED TYPE: a {cell['old_type']} cell became {cell['new_type']}: {first_line(cell['source'])}")
    for cell in results.get("changed", []):
        print(f"EDITED TEST: {first_line(cell['source'])} (restore the test cell: it is graded as released)")
    for cell in results.get("failed", []):
        line = explain(last_error_line(cell["raw_error"]))
        if setup and line.startswith("NameError"):
            line += " (the setup cell failed: see SETUP FAILED above)"
        print(f"FAIL: {first_line(cell['source'])}\n      {line}")
    if results:
        problems = [f"{len(results[key])} {what}" for key, what in (
            ("failed", "failing test cell(s)"), ("changed", "edited test cell(s)"), ("type_changed", "cell(s) of another type"),
            ("reference", "answer(s) calling a reference that grading switches off"), ("setup", "failed setup cell"))
            if results.get(key)]
        print(f"{args.notebook}: {', '.join(problems)}")
        return 1
    print(f"{args.notebook}: all visible tests pass (hidden tests may still fail: python -m mha_course.selfgrade)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
