"""safegrade: a batch killed half-way and run again ends with the grades of an uninterrupted run."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from safegrade_support import A, expected_scores, honest, honest_lost, results, safegrade, scores, write

pytestmark = pytest.mark.filterwarnings("ignore")


def _kernels_left(scratch, wait=10):
    """Processes still working in ``scratch`` (their working folder under it), after up to ``wait`` s."""
    deadline = time.time() + wait
    while True:
        left = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and os.readlink(proc / "cwd").startswith(str(scratch)):
                    left.append(int(proc.name))
            except OSError:
                pass
        if not left or time.time() > deadline:
            return left
        time.sleep(0.2)


def test_killed_batch_resumes_to_the_grades_of_an_uninterrupted_run(tmp_path):
    """An uninterrupted run gives the designed grades (test_safegrade): the resumed run gives them too."""
    students = {f"{name}_{i}": nb for i in range(2) for name, nb in honest().items()}
    folder = write(students, tmp_path / "submitted")
    proc = safegrade(folder, tmp_path / "out", tmp_path / "course", wait=False, tmpdir=tmp_path / "tmp")
    deadline = time.time() + 300
    while len(list((tmp_path / "out" / "results").glob("*.json"))) < 2 and time.time() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the batch and its workers, mid-way
    proc.wait()
    assert _kernels_left(tmp_path / "tmp") == []  # kernels live in sessions of their own: they die too
    done = set(results(tmp_path / "out"))
    assert 2 <= len(done) < len(students)
    rerun = safegrade(folder, tmp_path / "out", tmp_path / "course")
    assert f"{len(done)} already graded" in rerun.stderr
    designed = {f"{name}_{i}": expected_scores(A, lost) for i in range(2) for name, lost in honest_lost().items()}
    assert {s: scores(r) for s, r in results(tmp_path / "out").items()} == designed
