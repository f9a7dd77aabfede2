"""The source notebooks follow the course's conventions (nbgrader's ps1 example as the model):
answers keep a signature and a numpydoc docstring, test cells open with a one-line docstring and
carry points and hidden tests, and every question says its difficulty, its points and a hint."""
import re

import pytest

import grading_support as gs
from mha_course.notebook import parse_runs, questions

ASSIGNMENTS = sorted(p.name for p in (gs.ROOT / "solutions").iterdir() if p.is_dir() and p.name[:2].isdigit())
# Question ids whose answer does not depend on a shape (a set of names, a letter from a list):
# nothing to vary in hidden tests. Each assignment names its own (CHOICE_QUESTIONS in its
# solutions/<assignment>/grading_answers.py).
CHOICE_QUESTIONS = {q for a in gs.ASSIGNMENTS for q in getattr(gs.designed(a), "CHOICE_QUESTIONS", ())}


def needs_hidden_tests(cell):
    """A test cell has hidden tests unless every question it runs is a choice (nothing to vary)."""
    return any(question not in CHOICE_QUESTIONS for question, _ in parse_runs(cell.source))


def cells(assignment, kind):
    return [c for c in gs.read("solutions", assignment).cells if c.metadata.get("nbgrader", {}).get(kind)]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_answers_keep_signature_and_docstring(assignment):
    for cell in cells(assignment, "solution"):
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source
        head = cell.source.split("### BEGIN SOLUTION")[0]
        assert head.startswith("def ") and '"""' in head, cell.metadata["nbgrader"]["grade_id"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_have_docstring_points_and_hidden_tests(assignment):
    for cell in cells(assignment, "grade"):
        meta = cell.metadata["nbgrader"]
        first = cell.source.splitlines()[0]
        assert first.startswith('"""') and first.endswith('"""') and len(first) > 20, meta["grade_id"]
        assert meta["points"] > 0 and meta["locked"]
        assert re.fullmatch(r"[a-z0-9_]{10,}", meta["grade_id"])
        if needs_hidden_tests(cell):
            assert "### BEGIN HIDDEN TESTS" in cell.source, meta["grade_id"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_are_in_the_judges_format(assignment):
    """Every test cell sends results to the judge (run calls with literal cases), visible and hidden
    ones apart, and uses no checking helper in the kernel."""
    for cell in cells(assignment, "grade"):
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        visible = cell.source.split("### BEGIN HIDDEN TESTS")[0]
        assert parse_runs(visible), grade_id
        if needs_hidden_tests(cell):
            hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            assert parse_runs(hidden), grade_id
        assert "expect_" not in cell.source and "assert" not in cell.source, grade_id


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_look_the_answer_up_when_they_run(assignment):
    """``run``'s callable is ``_call`` or a lambda, never the answer's function by name: a name is looked up
    before ``run`` starts, so an answer cell that failed (an IndentationError) would show as a NameError
    instead of its own error and line."""
    import ast

    for cell in cells(assignment, "grade"):
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "run":
                callable_ = node.args[1]
                lazy = isinstance(callable_, ast.Lambda) or (isinstance(callable_, ast.Name) and callable_.id == "_call")
                assert lazy, (cell.metadata["nbgrader"]["grade_id"], ast.unparse(callable_))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_questions_state_difficulty_points_and_hint(assignment):
    nb = gs.read("solutions", assignment)
    headings = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Q")]
    asked = questions(nb)  # the headings in the format "## Qk [E] · p points: ..."
    assert headings and len(asked) == len(headings)
    assert all("<summary>Hint</summary>" in c.source for c in headings)
    points = gs.points_of_tests(assignment)
    assert [q.points for q in asked] == [sum(points[t] for t in q.tests) for q in asked]  # promised = given
    assert sum(len(q.tests) for q in asked) == len(points)  # every test cell is under a question
    assert f"({sum(q.points for q in asked)} in all)" in nb.cells[0].source


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebooks_are_clean(assignment):
    nb = gs.read("solutions", assignment)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_introduction_names_the_helpers_of_the_course_manifest(assignment):
    from mha_course.course import COURSE

    intro = gs.read("solutions", assignment).cells[0].source
    (rule,) = [p for p in intro.split("\n\n") if p.startswith("**Allowed helpers.**")]
    assert set(re.findall(r"`mk\.(\w+)`", rule)) == set(COURSE[assignment].helpers)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_introduction_says_what_works_in_the_browser_edition(assignment):
    """Issue 36: JupyterLite has no Validate button and no terminal; the introduction says what works there."""
    intro = " ".join(gs.read("solutions", assignment).cells[0].source.split())
    assert "**In the browser edition** (JupyterLite) there is no Validate button and no terminal" in intro
    assert "**Run ▸ Run All Cells**" in intro and "**File ▸ Download**" in intro
