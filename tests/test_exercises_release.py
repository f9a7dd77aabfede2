"""exercises/ is exactly nbgrader's release of solutions/, holds no answers and no hidden tests,
and runs with errors only where a question is still unanswered."""
import nbformat
import pytest

import grading_support as gs
from nbval_kernels import execute_over_ipc
from mha_course.course import COURSE
from mha_course.release import release

ASSIGNMENTS = sorted(p.name for p in (gs.ROOT / "solutions").iterdir() if p.is_dir() and p.name[:2].isdigit())


def _comparable(nb):
    """The notebook without volatile metadata (execution timestamps, if a tool added any)."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def _regions(source, begin, end):
    """Text between ``### BEGIN <x>`` and ``### END <x>`` lines."""
    inside, out = False, []
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            out.append(line)
    return out


def _outside_hidden(source):
    """Lines of a cell outside its hidden-test regions (what the release keeps)."""
    inside, out = False, []
    for line in source.splitlines():
        if "BEGIN HIDDEN TESTS" in line:
            inside = True
        elif "END HIDDEN TESTS" in line:
            inside = False
        elif not inside:
            out.append(line)
    return out


def test_every_assignment_of_the_manifest_is_released():
    """solutions/ holds exactly the manifest's assignments, and exercises/ releases each of them."""
    assert ASSIGNMENTS == sorted(COURSE)
    assert sorted(p.name for p in (gs.ROOT / "exercises").iterdir() if p.is_dir()) == ASSIGNMENTS


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """``python -m mha_course.release --into DIR``'s work, in this process."""
    return release(into=tmp_path_factory.mktemp("release"))


def _files(release, assignment):
    """Files of one assignment's release, without what Jupyter and Python leave behind locally."""
    local = {".ipynb_checkpoints", "__pycache__"}
    return sorted(p.relative_to(release) for p in (release / assignment).rglob("*")
                  if not local & set(p.relative_to(release).parts))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_are_the_generated_release(regenerated, assignment):
    committed = _files(gs.ROOT / "exercises", assignment)
    fresh = _files(regenerated, assignment)
    assert committed == fresh
    name = f"{assignment}/{assignment}.ipynb"
    assert _comparable(nbformat.read(regenerated / name, as_version=4)) == \
        _comparable(gs.read("exercises", assignment)), f"exercises/{name} is stale: python -m mha_course.release"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_holds_no_answers_and_no_hidden_tests(assignment):
    release = gs.read("exercises", assignment)
    text = "\n".join(c.source for c in release.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    source_cells = gs.read("solutions", assignment).cells
    visible = {line for c in source_cells for line in _outside_hidden(c.source)}
    for cell in source_cells:
        answer = "\n".join(_regions(cell.source, "BEGIN SOLUTION", "END SOLUTION")).strip()
        assert not answer or answer not in text
        for line in _regions(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            if line.strip() and line not in visible:
                assert line not in text, f"hidden test line released: {line!r}"
    stubs = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert stubs and all(c.source.rstrip().endswith("raise NotImplementedError()") for c in stubs)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_runs_with_errors_only_in_unanswered_places(assignment):
    nb = gs.read("exercises", assignment)
    execute_over_ipc(nb, timeout=120, kernel_name="python3", allow_errors=True,
                     resources={"metadata": {"path": str(gs.ROOT / "exercises" / assignment)}})
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        errors = [o for o in cell.outputs if o.output_type == "error"]
        stderr = [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
        assert not stderr, f"stderr in {cell.source[:60]!r}: {stderr[0].text[:200]}"
        if meta.get("grade"):
            assert [e.ename for e in errors] in (["NotImplementedError"], ["AssertionError"]), meta["grade_id"]
        elif meta.get("solution"):
            assert [e.ename for e in errors] in ([], ["NotImplementedError"]), meta["grade_id"]
        else:
            assert not errors, f"error in a cell the learner does not write: {cell.source[:60]!r}"
