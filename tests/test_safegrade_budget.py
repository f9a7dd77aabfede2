"""safegrade: a submission that stalls cell after cell is stopped by its time budget, not after hours."""
from __future__ import annotations

import nbformat
import pytest

from safegrade_support import A, expected_scores, honest, results, safegrade, scores, write

pytestmark = pytest.mark.filterwarnings("ignore")

STALL = "import time\ntime.sleep(100)"  # no CPU used: only the clock stops it


def test_the_time_budget_stops_a_submission_of_many_stalling_cells(tmp_path):
    nb = honest()["honest_full"]
    first_test = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade"))
    nb.cells[first_test:first_test] = [nbformat.v4.new_code_cell(STALL) for _ in range(6)]
    folder = write({"staller": nb, "honest_full": honest()["honest_full"]}, tmp_path / "submitted")
    safegrade(folder, tmp_path / "out", tmp_path / "course", "--timeout", "2", "--budget", "5")
    graded = results(tmp_path / "out")
    staller = graded["staller"]
    assert scores(staller) == expected_scores(A, set(expected_scores(A, set())))  # every test came after the stall
    assert staller["review"] and any("time budget of 5 s spent" in text for _, text in staller["flags"])
    assert scores(graded["honest_full"]) == expected_scores(A, set())  # same batch, same budget
