"""The book's solutions page: every answer folded, no hidden tests, and the switch that hides them."""
import nbformat
import pytest

import grading_support as gs
from nbval_kernels import execute_over_ipc

PAGE = gs.ROOT / "book" / "solutions.ipynb"
ASSIGNMENTS = sorted(p.name for p in (gs.ROOT / "solutions").iterdir() if p.is_dir() and p.name[:2].isdigit())


def rendered_html(monkeypatch, hide):
    """Execute the page (as the site build does) and return its HTML outputs joined."""
    if hide:
        monkeypatch.setenv("MHA_HIDE_SOLUTIONS", "1")
    else:
        monkeypatch.delenv("MHA_HIDE_SOLUTIONS", raising=False)
    nb = nbformat.read(PAGE, as_version=4)
    execute_over_ipc(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(PAGE.parent)}})
    return "\n".join(o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_every_answer_is_there_folded_without_hidden_tests(monkeypatch):
    html = rendered_html(monkeypatch, hide=False)
    answers = sum(len(gs.answer_ids(a)) for a in ASSIGNMENTS)
    assert html.count("<details>") == answers
    assert "<details open" not in html  # folded until clicked
    assert "HIDDEN TESTS" not in html and "BEGIN SOLUTION" not in html
    # test cells call expect_* helpers and define _check_* functions; answers never do
    assert "expect_" not in html and "_check_" not in html


def test_switch_leaves_the_solutions_out(monkeypatch):
    html = rendered_html(monkeypatch, hide=True)
    assert "<details>" not in html
    assert "not part of this edition" in html


@pytest.mark.parametrize("name", ["exercises", "solutions", "instructor_guide"])
def test_practice_chapters_are_in_the_toc(name):
    assert f"file: book/{name}\n" in (gs.ROOT / "_toc.yml").read_text()
