"""A class graded in shards (as on several machines) and merged gives the grades of one whole run."""
from __future__ import annotations

import shutil

import pytest

from safegrade_support import A, expected_scores, honest, results, safegrade, scores, write

pytestmark = pytest.mark.filterwarnings("ignore")


def test_shards_merge_into_the_grades_of_a_whole_run(tmp_path):
    from nbgrader.api import Gradebook

    kinds = honest()
    folder = write(kinds, tmp_path / "submitted")
    for k in (1, 2):
        safegrade(folder, tmp_path / f"shard_{k}", tmp_path / "unused", "--shard", f"{k}/2", "--no-gradebook")
    shards = [set(results(tmp_path / f"shard_{k}")) for k in (1, 2)]
    assert shards[0] and shards[1] and not shards[0] & shards[1] and shards[0] | shards[1] == set(kinds)
    merged = tmp_path / "merged"
    (merged / "results").mkdir(parents=True)
    for k in (1, 2):
        for result in (tmp_path / f"shard_{k}" / "results").glob("*.json"):
            shutil.copy(result, merged / "results")
        shutil.copytree(tmp_path / f"shard_{k}" / "autograded", merged / "autograded", dirs_exist_ok=True)
    run = safegrade(folder, merged, tmp_path / "course", "--merge-only")
    assert "already graded" not in run.stderr  # nothing graded again
    with Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}") as gradebook:
        in_book = {s.student.id: s.score for s in gradebook.assignment_submissions(A)}
    assert set(in_book) == set(kinds) and (merged / "grades.csv").is_file()
    for student, result in results(merged).items():
        assert in_book[student] == result["total"], student
    assert scores(results(merged)["honest_full"]) == expected_scores(A, set())
    assert in_book["honest_full"] == sum(expected_scores(A, set()).values()) and in_book["honest_blank"] == 0
