"""The wheel declares what it ships: mha_kit needs numpy and ml_dtypes (matplotlib for its plots
modules: the `plots` extra), and mha_course, also in the wheel, needs the `course` extra (`pip install .[course]`)."""

import ast
import functools
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

import pytest
from booktoc import REPO_ROOT

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
OWN = {"mha_kit", "mha_course"}


def canonical(name):
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requirements):
    return {canonical(re.match(r"[A-Za-z0-9._-]+", line).group()) for line in requirements}


def third_party_imports(path):
    """``{top-level module: [files]}`` for every absolute import of a module outside the standard library."""
    found = {}
    for file in sorted(path.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for top in {name.split(".")[0] for name in names}:
                if top not in sys.stdlib_module_names and top not in OWN and top != "__future__":
                    found.setdefault(top, []).append(file.relative_to(REPO_ROOT).as_posix())
    return found


@functools.cache
def _installed():
    return packages_distributions()  # reads every installed distribution's file list: once


def distributions(module):
    dists = _installed().get(module)
    assert dists, f"{module} is imported but no installed distribution provides it"
    return {canonical(dist) for dist in dists}


@pytest.mark.parametrize("package, extras", [("mha_kit", []), ("mha_course", ["course"])])
def test_every_import_is_declared(package, extras):
    """Each third-party module a package imports comes from a distribution the wheel declares for it."""
    allowed = declared(PROJECT["project"]["dependencies"])
    for extra in extras:
        allowed |= declared(PROJECT["project"]["optional-dependencies"][extra])
    imports = third_party_imports(REPO_ROOT / package)
    if package == "mha_kit":  # matplotlib only in mha_kit's plots modules, declared as the `plots` extra
        assert all(re.fullmatch(r"mha_kit/plots(_\w+)?\.py", file) for file in imports.pop("matplotlib", []))
        assert "matplotlib" in declared(PROJECT["project"]["optional-dependencies"]["plots"])
    missing = {module: files for module, files in imports.items() if not distributions(module) & allowed}
    assert not missing, f"{package} imports modules that pyproject.toml does not declare for it: {missing}"


def test_mha_kit_needs_numpy_and_ml_dtypes_only():
    assert declared(PROJECT["project"]["dependencies"]) == {"numpy", "ml-dtypes"}
    assert set(third_party_imports(REPO_ROOT / "mha_kit")) == {"numpy", "ml_dtypes", "matplotlib"}


def test_the_wheel_ships_mha_kit_and_mha_course():
    assert PROJECT["tool"]["setuptools"]["packages"]["find"]["include"] == ["mha_kit*", "mha_course*"]


def test_the_course_extra_brings_nbgrader_and_a_kernel():
    course = declared(PROJECT["project"]["optional-dependencies"]["course"])
    assert {"nbgrader", "ipykernel", "jupyterlab"} <= course
