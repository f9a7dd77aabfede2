"""The notebook that runs is rebuilt on the instructor's cells: changes to the tests earn nothing and are flagged."""
from __future__ import annotations

from grading_support import read, submission
from mha_course.plugins.rebuild import rebuild


def test_reordered_cells_run_in_the_source_order_and_are_flagged():
    nb = submission("01_shapes", {})
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")]
    first, last = nb.cells.index(graded[0]), nb.cells.index(graded[-1])
    nb.cells[first], nb.cells[last] = nb.cells[last], nb.cells[first]
    release = read("exercises", "01_shapes")
    rebuilt, flags = rebuild(nb, release)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in rebuilt.cells]
    assert ids == [c.metadata.get("nbgrader", {}).get("grade_id") for c in release.cells]
    assert ("review", "cells reordered (graded in the source's order)") in flags


def test_cells_of_the_wrong_types_are_read_as_nothing_and_flagged():
    nb = submission("01_shapes", {})
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    nb.cells[0]["metadata"] = 5
    nb.cells[1]["metadata"] = {"nbgrader": "x"}
    answers[0]["metadata"]["nbgrader"]["grade_id"] = ["a", "list"]
    answers[1]["source"] = 42
    nb.cells.append(7)
    rebuilt, flags = rebuild(nb, read("exercises", "01_shapes"))
    assert [c.source for c in rebuilt.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_answer"]
    assert any(text.startswith("cells deleted (restored from the source)") for _, text in flags), flags


def test_the_learners_own_cells_are_kept_after_the_answer_they_follow():
    nb = submission("01_shapes", {})
    answer = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution"))
    nb.cells.insert(answer + 1, nb.cells[answer].copy())
    nb.cells[answer + 1].metadata = {}
    nb.cells[answer + 1].source = "print('my own check')"
    rebuilt, flags = rebuild(nb, read("exercises", "01_shapes"))
    sources = [c.source for c in rebuilt.cells]
    assert sources[sources.index(nb.cells[answer].source) + 1] == "print('my own check')" and flags == []


def test_a_notebook_nested_too_deep_and_a_huge_answer_are_refused(tmp_path):
    from mha_course.plugins.api import load
    from mha_course.plugins.rebuild import MAX_CELL_BYTES

    deep = tmp_path / "deep.ipynb"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert load(deep) == (None, "not a notebook: nested too deep")
    nb = submission("01_shapes", {})
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_answer")
    answer.source = "x = 1\n" * (6 * 1024**2 // 6)  # 6 MB
    rebuilt, flags = rebuild(nb, read("exercises", "01_shapes"))
    assert ("review", f"answer cell head_dim_answer holds {6 * 1024**2} characters (at most {MAX_CELL_BYTES}): "
                      "not graded") in flags
    stub = next(c for c in rebuilt.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_answer")
    assert "NotImplementedError" in stub.source
