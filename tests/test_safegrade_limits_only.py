"""safegrade without a sandbox (no bubblewrap, or MHA_SAFEGRADE_NO_SANDBOX=1): it says so, loudly, and still grades."""
from __future__ import annotations

import nbformat
import pytest

from safegrade_support import A, expected_scores, honest, hostile, results, safegrade, scores, write

pytestmark = pytest.mark.filterwarnings("ignore")


def test_without_a_sandbox_the_batch_warns_and_every_report_says_so(tmp_path):
    students = {"honest_full": honest()["honest_full"], "edit_tests": hostile()["edit_tests"]}
    folder = write(students, tmp_path / "submitted")
    run = safegrade(folder, tmp_path / "out", tmp_path / "course", env={"MHA_SAFEGRADE_NO_SANDBOX": "1"})
    assert "WARNING: no sandbox (bubblewrap) on this machine" in run.stderr
    assert "isolation: limits-only" in run.stderr
    graded = results(tmp_path / "out")
    assert {r["isolation"] for r in graded.values()} == {"limits-only"}
    assert scores(graded["honest_full"]) == expected_scores(A, set())
    assert graded["edit_tests"]["review"]  # the rebuild works the same without a sandbox
    report = (tmp_path / "out" / "reports" / "honest_full.txt").read_text()
    assert "isolation: limits-only" in report


@pytest.mark.parametrize("mode", ["bwrap", "limits-only"])
def test_the_kernel_talks_over_unix_sockets_with_or_without_a_sandbox(mode, tmp_path, monkeypatch):
    """jupyter_client picks a free TCP port and the kernel binds it a moment later: on a busy machine another process
    can take it first and the kernel dies at start, the submission's grade an error (jupyter_client issue 487).
    Unix sockets in the submission's own folder have no such gap, in either mode."""
    from mha_course.plugins import execute

    monkeypatch.setattr(execute, "kit_path", lambda assignment: str(tmp_path / "kit"))
    step = execute.SandboxedExecute()
    step.nb = nbformat.v4.new_notebook()
    step._mode, step._assignment, step._sockets = mode, A, str(tmp_path)
    manager = step.create_kernel_manager()
    assert (manager.transport, manager.ip) == ("ipc", str(tmp_path / "k"))
    assert manager.kernel_spec.argv[manager.kernel_spec.argv.index("--mode") + 1] == mode
