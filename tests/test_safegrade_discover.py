"""safegrade finds submissions in nbgrader's layout, a flat folder or a zip, under odd names too; bad options are refused."""
from __future__ import annotations

import json
import zipfile

import pytest

import nbformat

from mha_course.grade.intake import discover
from mha_course.notebook import MAX_BYTES
from mha_course.plugins.api import load
from mha_course.safegrade import main

A = "01_shapes"


def _touch(path, text="{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_submitted_layout_with_a_wrong_file_name_and_a_missing_notebook(tmp_path):
    _touch(tmp_path / "ann" / A / f"{A}.ipynb")
    _touch(tmp_path / "bo b" / A / "my work.ipynb")
    (tmp_path / "cy" / A).mkdir(parents=True)
    found, _ = discover(tmp_path, A, tmp_path)
    bob = next(s for s in found if s.startswith("bo_b-"))
    assert sorted(found) == ["ann", bob, "cy"]
    assert found["ann"][1] == [] and "my work.ipynb" in found[bob][1][0][1] and "no notebook" in found["cy"][1][0][1]


def test_flat_folder_and_zip(tmp_path):
    flat = tmp_path / "flat"
    _touch(flat / "ann.ipynb")
    _touch(flat / f"bob_{A}.ipynb")
    assert sorted(discover(flat, A, tmp_path)[0]) == ["ann", "bob"]
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"submitted/ann/{A}/{A}.ipynb", "{}")
        z.writestr("../evil.ipynb", "{}")
    found, _ = discover(archive, A, tmp_path / "scratch")
    assert sorted(found) == ["ann"] and not (tmp_path / "evil.ipynb").exists()


def test_names_that_clash_once_made_safe_never_take_each_others_row(tmp_path):
    for name in ("bo b", "bo_b", "bo\nb"):
        _touch(tmp_path / name / A / f"{A}.ipynb", name)
    found, _ = discover(tmp_path, A, tmp_path)
    assert found["bo_b"][0] == str(tmp_path / "bo_b" / A / f"{A}.ipynb")  # the name that was safe keeps its row
    assert len(found) == 3 and len({path for path, _, _ in found.values()}) == 3
    for student, (path, notes, extra) in found.items():
        assert "\n" not in student and extra["raw_name"] in ("bo b", "bo_b", "bo\nb")
        assert notes[-1] == ["info", "names that are the same once made safe: 'bo\\nb', 'bo b', 'bo_b'"], notes


def test_lms_file_names_map_to_student_ids_and_keep_the_lms_id(tmp_path):
    archive = tmp_path / "lms.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"smithjohn_12345_6789_{A}.ipynb", "{}")
        z.writestr(f"doejane_LATE_23456_7890_{A}-1.ipynb", "{}")
        z.writestr(f"doejane_LATE_23456_7001_{A}.ipynb", "{}")
    found, _ = discover(archive, A, tmp_path / "scratch")
    assert sorted(found) == ["doejane", "smithjohn"]
    assert found["smithjohn"][2]["lms_id"] == "12345" and found["doejane"][2]["lms_id"] == "23456"
    assert found["doejane"][0].endswith(f"doejane_LATE_23456_7890_{A}-1.ipynb")  # the later upload
    assert ["info", "handed in late (LMS)"] in found["doejane"][1]
    custom, _ = discover(archive, A, tmp_path / "other", lms_pattern=r"(?P<student>[a-z]+)_.*\.ipynb")
    assert sorted(custom) == ["doejane", "smithjohn"] and custom["smithjohn"][2]["lms_id"] == ""


def test_a_link_out_of_the_submissions_is_not_followed(tmp_path):
    secret = _touch(tmp_path / "solutions" / f"{A}.ipynb", '{"cells": []}')
    submitted = tmp_path / "submitted"
    (submitted / "eve").mkdir(parents=True)
    (submitted / "eve" / A).symlink_to(secret.parent, target_is_directory=True)
    (submitted / "mal").mkdir()
    (submitted / "mal" / f"{A}.ipynb").symlink_to(secret)
    found, _ = discover(submitted, A, tmp_path)
    for student in ("eve", "mal"):
        path, notes, _ = found[student]
        assert path == "" and notes[0][0] == "review" and "symbolic link" in notes[0][1], found[student]
    assert load("") == (None, "no file")


@pytest.mark.parametrize("link", [f"mallory/{A}", f"mallory/{A}/{A}.ipynb"])  # her folder, or her file
def test_a_link_to_a_classmates_submission_is_graded_once_for_its_owner(tmp_path, link):
    alice = _touch(tmp_path / "alice_smith" / A / f"{A}.ipynb")
    target = alice.parent if link.count("/") == 1 else alice
    (tmp_path / link).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / link).symlink_to(target, target_is_directory=target.is_dir())
    found, _ = discover(tmp_path, A, tmp_path / "scratch")
    assert found["alice_smith"][0] == str(alice)
    path, notes, _ = found["mallory"]
    assert path == "" and notes[-1][0] == "review", notes  # not graded as hers: the blank release, for a person
    assert "mallory" in notes[-1][1] and "alice_smith" in notes[-1][1]
    assert [severity for severity, text in found["alice_smith"][1] if "mallory" in text] == ["info"]


def test_links_inside_the_submissions_are_resolved_to_the_real_file(tmp_path):
    real = _touch(tmp_path / ".drafts" / "bob_work.ipynb")  # hidden: nobody's submission, bob's link the only way in
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / f"{A}.ipynb").symlink_to(real)
    found, _ = discover(tmp_path, A, tmp_path / "scratch")
    assert found["bob"][0] == str(real) and found["bob"][1] == []


def test_a_notebook_with_a_byte_order_mark_and_crlf_line_ends_is_read(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1\ny = 2")])
    path = tmp_path / f"{A}.ipynb"
    path.write_bytes(b"\xef\xbb\xbf" + nbformat.writes(nb).replace("\n", "\r\n").encode())
    loaded, problem = load(path)
    assert problem is None and loaded.cells[0].source == "x = 1\ny = 2"


def test_an_oversized_file_is_not_read(tmp_path):
    big = tmp_path / "big.ipynb"
    with open(big, "wb") as f:
        f.truncate(MAX_BYTES + 1)
    assert load(big) == (None, f"file too large ({MAX_BYTES + 1} bytes; at most {MAX_BYTES})")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"ann/{A}/{A}.ipynb", "{}")
        z.writestr(f"bob/{A}/{A}.ipynb", b"\0" * (MAX_BYTES + 1))
    found, _ = discover(archive, A, tmp_path / "scratch")
    assert sorted(found) == ["ann", "bob"]
    assert found["bob"][1] == [["review", f"no notebook in '{A}'/ (found: '{A}.ipynb.too-large')"]]


@pytest.mark.parametrize("options, message", [
    (["--shard", "3/2"], "--shard must be K/N with 1 <= K <= N, got '3/2'"),
    (["--shard", "0/4"], "--shard must be K/N with 1 <= K <= N, got '0/4'"),
    (["--shard", "one/two"], "--shard must be K/N with 1 <= K <= N, got 'one/two'"),
    (["--workers", "0"], "--workers must be at least 1, got 0"),
    (["--timeout", "-5"], "--timeout must be at least 1, got -5"),
    (["--assignment", "07_nope"], "no assignment '07_nope' under"),
    (["--lms-pattern", "(?P<student"], "--lms-pattern is not a regular expression"),
])
def test_bad_options_are_refused_with_the_rule_and_the_value(tmp_path, capsys, options, message):
    argv = [str(tmp_path), "--assignment", A, "--no-gradebook", *options]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_missing_submissions_folder_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nowhere"), "--assignment", A])
    assert f"no submissions at {tmp_path / 'nowhere'}" in capsys.readouterr().err


def test_a_rerun_grades_again_what_changed_failed_or_cannot_be_read(tmp_path):
    from mha_course.grade.intake import sha256_of
    from mha_course.grade.pipeline import Template
    from mha_course.grade.pool import tasks

    names = ["same", "changed", "errored", "corrupt", "new"]
    found = {name: (str(_touch(tmp_path / "sub" / f"{name}.ipynb", name)), [], {}) for name in names}
    (tmp_path / "out" / "results").mkdir(parents=True)
    for name in names[:-1]:
        sha = sha256_of(found[name][0]) if name != "changed" else "0" * 64
        status = "error" if name == "errored" else "ok"
        text = "{not json" if name == "corrupt" else json.dumps({"sha256": sha, "status": status})
        (tmp_path / "out" / "results" / f"{name}.json").write_text(text)
    todo = tasks(found, A, tmp_path / "out", tmp_path, Template(tmp_path, A), "bwrap", 30)
    assert sorted(t.student for t in todo) == ["changed", "corrupt", "errored", "new"]
    # a stale result is gone at once: a batch killed before grading it again cannot keep the old grade
    assert sorted(p.stem for p in (tmp_path / "out" / "results").glob("*.json")) == ["same"]


def test_hidden_entries_are_nobodys_submission_and_are_reported(tmp_path):
    _touch(tmp_path / "ann.ipynb")
    _touch(tmp_path / ".ipynb_checkpoints" / "ann-checkpoint.ipynb")
    _touch(tmp_path / "notes.txt")
    found, skipped = discover(tmp_path, A, tmp_path)
    assert sorted(found) == ["ann"] and skipped == [".ipynb_checkpoints", "notes.txt"]


@pytest.mark.parametrize("layout, message", [
    ({}, "no submissions in"),
    ({".DS_Store": "x"}, "no submissions in"),
    ({"ann/02_params_compute/02_params_compute.ipynb": "{}"}, "no submission holds a notebook for 01_shapes"),
    ({"ann_02_params_compute.ipynb": "{}", "bob_02_params_compute.ipynb": "{}"},
     "every notebook is named for 02_params_compute, not 01_shapes"),
])
def test_nothing_to_grade_is_an_error_that_writes_nothing(tmp_path, capsys, layout, message):
    folder = tmp_path / "submitted"
    folder.mkdir()
    for name, text in layout.items():
        _touch(folder / name, text)
    course = tmp_path / "course"
    code = main([str(folder), "--assignment", A, "--course", str(course), "--out", str(tmp_path / "out")])
    assert code == 2 and message in capsys.readouterr().err
    assert not course.exists() and not (tmp_path / "out").exists()


def test_help_says_the_course_is_the_current_folder(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "The course is the current folder's nbgrader course" in " ".join(capsys.readouterr().out.split())
    monkeypatch.chdir(tmp_path)  # not a course: refused, with the way out
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--assignment", A])
    assert "is not an nbgrader course (no nbgrader_config.py)" in capsys.readouterr().err


def test_a_zip_that_unpacks_to_more_than_its_cap_is_refused(tmp_path, monkeypatch):
    import mha_course.grade.intake as intake

    monkeypatch.setattr(intake, "MAX_ZIP_BYTES", 3 * 1024**2)  # the same rule as 256 MiB, faster
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for k in range(4):
            z.writestr(f"s{k}/{A}/{A}.ipynb", b"\0" * 1024**2)  # 1 MiB each, a few KiB packed
    with pytest.raises(intake.IntakeError, match="bomb.zip unpacks to more than 3 MiB: refused"):
        discover(archive, A, tmp_path / "scratch")
