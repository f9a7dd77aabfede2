"""Similarity flags (issue 37): copies between classmates and answers taken from code a learner can read.

The pass (:mod:`mha_course.grade.similarity`) runs after a class is graded; here first on results written
by hand (no kernel), then through ``python -m mha_course.safegrade``: a hard link to a classmate's
notebook, two classmates sharing a long answer of their own, and exercise 11's slip simulator (a
judge file the browser edition packs) pasted as Q2's answer are flagged for review in grades.csv, the
reports and the gradebook's comment; an answer of one's own is not, and no score changes.
"""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import nbformat
import pytest

import grading_support as gs
from mha_course.grade import similarity
from mha_course.notebook import answers
from mha_course.grade.pipeline import Result
from safegrade_support import results, safegrade, write

pytestmark = pytest.mark.filterwarnings("ignore")
A, A11 = "01_shapes", "11_serving_2026"

# a split_heads of one's own, long enough to tell apart: two classmates hand it in, one with its names changed
OWN_SPLIT = '''def split_heads(x, num_heads):
    batch, tokens, width = x.shape
    if width % num_heads:
        raise ValueError(f"width {width} does not split into {num_heads} heads")
    size = width // num_heads
    pieces = [x[:, :, head * size:(head + 1) * size] for head in range(num_heads)]
    stacked = np.stack(pieces, axis=1)  # (batch, heads, tokens, size)
    assert stacked.shape == (batch, num_heads, tokens, size), stacked.shape
    return stacked
'''
RENAMED = (OWN_SPLIT.replace("batch", "b").replace("tokens", "t").replace("width", "w").replace("pieces", "parts")
           .replace("# (batch, heads, tokens, size)", "# my own way"))
OTHER_SPLIT = '''def split_heads(x, num_heads):
    out = np.empty((x.shape[0], num_heads, x.shape[1], x.shape[2] // num_heads), dtype=x.dtype)
    for h in range(num_heads):
        out[:, h] = np.split(x, num_heads, axis=-1)[h]
    return out
'''


def slip_simulator_as_q2():
    """Exercise 11's judge helpers for Q2 (its judge file is packed into the browser edition), pasted as the answer."""
    source = (gs.ROOT / "solutions" / A11 / "grading_questions.py").read_text()
    helpers = re.search(r"def _blocks\(.*?\n    return found\n", source, re.S).group(0)
    nb = gs.submission(A11, {})
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "block_reuse_answer")
    cell.source = helpers + "\n\ndef block_reuse(requests, block_size):\n    return _uncapped(requests, block_size)\n"
    return nb


def _with_split(source):
    nb = gs.submission(A, {})
    next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "split_heads_answer").source = source
    return nb


def _class(out, assignment, notebooks, same_file=()):
    """Results as safegrade writes them (``results/``, ``autograded/``), without grading: full marks each."""
    (out / "results").mkdir(parents=True)
    for student, nb in notebooks.items():
        path = out / "autograded" / student / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        sha = "same" if student in same_file else student
        result = {"student": student, "file": str(path), "sha256": sha, "isolation": "bwrap",
                  **Result(assignment, {"t": (1.0, 1.0)}).to_dict()}
        (out / "results" / f"{student}.json").write_text(json.dumps(result))


def _release_answers(assignment):
    return answers(gs.read("exercises", assignment))


def test_the_pass_flags_copies_and_readable_code_and_no_answer_of_ones_own(tmp_path):
    solution = gs.submission(A, {})
    _class(tmp_path, A, {"alice": solution, "bob": solution, "carol": _with_split(OWN_SPLIT),
                         "dave": _with_split(RENAMED), "erin": _with_split(OTHER_SPLIT), "frank": solution},
           same_file={"alice", "bob"})
    changed = similarity.mark(tmp_path, A, _release_answers(A))
    flags = {s: [text for _, text in json.loads((tmp_path / "results" / f"{s}.json").read_text())["flags"]]
             for s in ("alice", "bob", "carol", "dave", "erin", "frank")}
    assert sorted(changed) == ["alice", "bob", "carol", "dave"]
    assert flags["bob"] == ["identical notebook: bob's file is byte for byte alice's (a copy or a hard link): "
                            "review bob and alice"]
    assert len(flags["carol"]) == 1 and flags["carol"][0].startswith("similar: split_heads_answer of carol and of dave "
                                                                      "share ")
    assert flags["erin"] == flags["frank"] == []  # an answer of one's own; the solution many wrote alike
    result = json.loads((tmp_path / "results" / "dave.json").read_text())
    assert (result["status"], result["review"], result["total"]) == ("review", True, 1.0)  # a person decides
    assert similarity.mark(tmp_path, A, _release_answers(A)) == []  # a rerun replaces, never repeats


def test_fingerprints_are_the_same_in_every_process():
    """copydetect hashes k-grams with Python's hash(), which PYTHONHASHSEED changes: which fingerprints winnowing
    keeps, and how many, moved a solution across MIN_FINGERPRINTS in a run of CI (frank flagged). Two processes with two
    seeds must agree, on the answer and on its count."""
    code = ("import json, sys; from mha_course.grade.similarity import fingerprints; "
            "print(json.dumps(sorted(fingerprints(sys.stdin.read()))))")
    runs = [subprocess.run([sys.executable, "-c", code], input=OWN_SPLIT, capture_output=True, text=True, check=True,
                           cwd=gs.ROOT, env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert runs[0] == runs[1] and len(json.loads(runs[0])) == len(similarity.fingerprints(OWN_SPLIT)) == 26


def test_the_pass_flags_a_judge_file_pasted_as_an_answer(tmp_path):
    _class(tmp_path, A11, {"mallory": slip_simulator_as_q2(), "alice": gs.read("exercises", A11)})
    similarity.mark(tmp_path, A11, _release_answers(A11))
    flags = json.loads((tmp_path / "results" / "mallory.json").read_text())["flags"]
    assert [f for f in flags if f[1].startswith("similar: block_reuse_answer of mallory is ")], flags
    assert "solutions/11_serving_2026/grading_questions.py" in flags[0][1] and flags[0][0] == "review"
    assert json.loads((tmp_path / "results" / "alice.json").read_text())["flags"] == []


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("similar")
    folder = write({"alice": gs.submission(A, {}), "carol": _with_split(OWN_SPLIT), "dave": _with_split(RENAMED),
                    "erin": _with_split(OTHER_SPLIT)}, tmp / "submitted")
    (folder / "bob" / A).mkdir(parents=True)
    os.link(folder / "alice" / A / f"{A}.ipynb", folder / "bob" / A / f"{A}.ipynb")  # a hard link: no symlink to see
    safegrade(folder, tmp / "out", tmp / "course", "--timeout", "8", similarity=True)
    return results(tmp / "out"), tmp


def test_a_hard_linked_notebook_and_a_shared_answer_are_flagged_everywhere(graded):
    found, tmp = graded
    assert found["bob"]["review"] and found["alice"]["review"] and found["carol"]["review"]
    assert found["bob"]["total"] == found["alice"]["total"] == found["bob"]["max_total"]  # no score changes
    assert found["erin"]["status"] == "ok", found["erin"]["flags"]
    rows = {row["student_id"]: row for row in csv.DictReader(open(tmp / "out" / "grades.csv"))}
    assert "identical notebook: bob's file is byte for byte alice's" in rows["bob"]["flags"]
    assert "similar: split_heads_answer of carol and of dave" in rows["carol"]["flags"]
    assert "review carol and dave" in (tmp / "out" / "reports" / "carol.txt").read_text()
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{tmp / 'course' / 'gradebook.db'}") as gradebook:
        comments = [c.auto_comment or "" for c in gradebook.find_submission_notebook(A, A, "dave").comments]
        assert gradebook.find_submission_notebook(A, A, "dave").flagged
    assert any("similar: split_heads_answer of dave and of carol" in c for c in comments), comments
