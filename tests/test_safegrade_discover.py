"""safegrade finds submissions in nbgrader's layout, a flat folder or a zip, under odd names too."""
from __future__ import annotations

import zipfile

from mha_course.safegrade import discover

A = "01_shapes"


def _touch(path, text="{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_submitted_layout_with_a_wrong_file_name_and_a_missing_notebook(tmp_path):
    _touch(tmp_path / "ann" / A / f"{A}.ipynb")
    _touch(tmp_path / "bo b" / A / "my work.ipynb")
    (tmp_path / "cy" / A).mkdir(parents=True)
    found = discover(tmp_path, A, tmp_path)
    assert sorted(found) == ["ann", "bo_b", "cy"]
    assert found["ann"][1] == [] and "my work.ipynb" in found["bo_b"][1][0] and "no notebook" in found["cy"][1][0]


def test_flat_folder_and_zip(tmp_path):
    flat = tmp_path / "flat"
    _touch(flat / "ann.ipynb")
    _touch(flat / f"bob_{A}.ipynb")
    assert sorted(discover(flat, A, tmp_path)) == ["ann", "bob"]
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"submitted/ann/{A}/{A}.ipynb", "{}")
        z.writestr("../evil.ipynb", "{}")
    found = discover(archive, A, tmp_path / "scratch")
    assert sorted(found) == ["ann"] and not (tmp_path / "evil.ipynb").exists()
