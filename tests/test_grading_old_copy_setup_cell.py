"""A copy of exercise 11 released before the course's runtime-folder move, checked with today's course.

Its setup cell imports ``mha_course.judge.cases``, which moved to ``mha_course.kernel.cases``: every test
cell then fails with ``NameError: name 'run' is not defined``. ``python -m mha_course.check`` says so once,
first, with the setup cell's real error, its line and what to do, and points each failing test at it (finding 4 of
Q6 and Q7 as a learner meets them; the judge's side is in ``tests/test_grading_fp8_scales_chunked_prefill.py``).
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import nbformat

from mha_course import check

ROOT = Path(__file__).resolve().parents[1]
A = "11_serving_2026"


def test_check_names_the_setup_cell_of_an_old_copy_and_what_to_do(tmp_path):
    nb = nbformat.read(ROOT / "exercises" / A / f"{A}.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert "from mha_course.kernel.cases import config, run" in setup.source
    setup.source = setup.source.replace("mha_course.kernel.cases", "mha_course.judge.cases")  # the old release's line
    path = tmp_path / A / f"{A}.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = check.main([str(path)])
    lines = out.getvalue().splitlines()
    assert code == 1
    assert lines[0] == ("SETUP FAILED: the setup cell failed with ModuleNotFoundError: No module named "
                        "'mha_course.judge.cases' (line 3): this copy predates the course's update: download the "
                        "current release, or change the import to mha_course.kernel.cases"), lines
    reasons = [line.strip() for head, line in zip(lines, lines[1:]) if head.startswith("FAIL: ")]
    assert len(reasons) == 7 and all(r.endswith("(the setup cell failed: see SETUP FAILED above)") for r in reasons), reasons
    assert lines[-1].endswith("7 failing test cell(s), 1 failed setup cell")
