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


def test_the_book_build_hands_its_browser_chapter_plan_to_the_browser_editions_build(tmp_path, monkeypatch):
    """The plan (which chapters run in the browser) is worked out once, in Sphinx, and read by website.lite.site."""
    from types import SimpleNamespace

    from website import build as site_build
    from website.lite import buttons
    from website.lite import site as lite_site

    plan = ({"book/positions": "chapters/positions.ipynb"}, {"book/low_precision_kv": "needs ml_dtypes (bf16 → FP8)"})
    monkeypatch.setattr(lite_site, "chapter_plan", lambda *args: plan)
    monkeypatch.setattr(lite_site, "kernel_static", lambda *args: tmp_path)
    monkeypatch.setenv(buttons.ENV_FLAG, "1")
    assert site_build.PLAN_ENV == lite_site.PLAN_ENV  # the variable the book build sets is the one Sphinx reads
    monkeypatch.setenv(lite_site.PLAN_ENV, str(tmp_path / "plan.json"))
    app = SimpleNamespace()
    buttons.plan_lite(app)
    assert app.mha_lite_plan[0] == plan[0]
    assert lite_site.read_plan(tmp_path / "plan.json") == plan

    commands = []
    monkeypatch.setattr(site_build.subprocess, "run", lambda command, **kw: commands.append(command) or
                        SimpleNamespace(returncode=0, stdout="", stderr=""))
    site_build.build_lite(tmp_path / "html", tmp_path / "plan.json")
    site_build.build_lite(tmp_path / "html")
    assert commands[0][-2:] == ["--plan", str(tmp_path / "plan.json")] and "--plan" not in commands[1]
    built = []
    monkeypatch.setattr(lite_site, "build", lambda site, venv, plan=None: built.append(plan))
    assert lite_site.main([str(tmp_path / "html"), "--plan", str(tmp_path / "plan.json")]) == 0
    assert lite_site.main([str(tmp_path / "html")]) == 0
    assert built == [plan, None]
