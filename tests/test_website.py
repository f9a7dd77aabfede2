"""The website package and the benchmarks are packages, not folders joined by path edits (issue 34).

* No code of the repository edits ``sys.path`` to reach another folder (tests excepted: a test may
  load a standalone file, or give a subprocess its own path); the packages import one another.
* Every Sphinx extension of ``_config.yml`` is a module of ``website`` that imports as it is named,
  with the repository's root, the one folder jupyter-book puts on the build's import path.
* ``tools/`` holds no Python module.
"""
import importlib
import json
import re

import pytest
import yaml
from booktoc import REPO_ROOT

#: Where the project's own code lives (tests/ is left out: see the module's docstring).
CODE = ("website", "benchmarks", "mha_kit", "mha_course", "solutions", "book")
PATH_EDIT = re.compile(r"\bsys\.path\s*(\.\s*(insert|append|extend)\s*\(|\[[^\]]*\]\s*=(?!=)|\+?=(?!=))")


def path_edits(text):
    """The lines of ``text`` that change ``sys.path``."""
    return [line.strip() for line in text.splitlines() if PATH_EDIT.search(line)]


def code_text(path):
    """A Python file's text, or a notebook's code cells."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return path.read_text(encoding="utf-8")


def test_path_edits_are_found_however_written():
    assert path_edits("import sys\nsys.path.insert(0, str(ROOT / 'tools'))\nx = 1") == [
        "sys.path.insert(0, str(ROOT / 'tools'))"]
    assert len(path_edits("sys.path.append(p)\nsys.path[:0] = [p]\nsys.path += [p]\nsys.path = [p]")) == 4
    assert path_edits("print(sys.path)\nfor p in sys.path:\n    pass\nok = p in sys.path or sys.path == [p]") == []


def test_no_code_edits_the_import_path():
    found = {}
    for folder in CODE:
        for path in sorted((REPO_ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".ipynb") and ".ipynb_checkpoints" not in path.parts:
                lines = path_edits(code_text(path))
                if lines:
                    found[path.relative_to(REPO_ROOT).as_posix()] = lines
    for path in sorted(REPO_ROOT.glob("*.py")):
        if path_edits(code_text(path)):
            found[path.name] = path_edits(code_text(path))
    assert not found, found


def local_extensions():
    config = yaml.safe_load((REPO_ROOT / "_config.yml").read_text(encoding="utf-8"))
    return config["sphinx"]["local_extensions"]


@pytest.mark.parametrize("name", sorted(local_extensions()))
def test_each_sphinx_extension_is_a_module_of_the_website_package(name):
    assert name.startswith(("website.ext.", "website.lite.")), name
    assert local_extensions()[name] in ("./", "."), "the repository's root, whence `website` imports"
    module = importlib.import_module(name)
    assert callable(module.setup), name


def test_tools_holds_no_python_module():
    assert not sorted((REPO_ROOT / "tools").rglob("*.py"))
