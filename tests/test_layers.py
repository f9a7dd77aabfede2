"""No import in mha_course runs back up a layer, and none closes a cycle; the kernel side stays pure.

The course tools are layers, lowest first, and a layer is a folder (or a file) of the package: a
module imports only modules of its own layer or of the layers below it, at the top of the file or
inside a function alike (an import inside a function that runs back up a layer hides a cycle all the
same). What runs in a kernel, the browser's included (:data:`mha_course.course.BROWSER_SIDE`),
imports only the standard library, numpy, IPython and ``mha_kit``, followed through every module of
the repository it reaches. The graphs are read with ``ast``: nothing is imported.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import mha_course
from mha_course.course import BROWSER_SIDE, package_files
from website.lite.kernel import module_path

PACKAGE = Path(mha_course.__file__).resolve().parent

#: The layers, lowest first: (name, the package's folders and files). A folder holds its modules whole;
#: every other module of the package (``__init__.py``, the commands) is a command, the top layer.
LAYERS = [
    ("the ground: the manifest, the notebook conventions, the wire format", ("course", "notebook", "wire")),
    ("the judge", ("judge",)),
    ("the kernel side: what a test cell imports", ("kernel",)),
    ("what nbgrader_config.py names, and nbgrader's API", ("plugins",)),
    ("safegrade's batch", ("grade",)),
]
#: What the modules of :data:`~mha_course.course.BROWSER_SIDE` may import from outside the repository:
#: the browser edition's kernel has these, and the standard library.
BROWSER_HAS = {"numpy", "IPython", "mha_kit"}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules():
    """``{module name: path}`` of every module of mha_course (not the sandboxed kernel's stand-ins)."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "kernel_path" not in p.parts}


def _import_statements(name, path, top_level_only=False):
    """``(module, [imported names])`` of each import statement of module ``name`` (at ``path``), relative ones resolved.

    ``import a.b`` gives ``("a.b", [])``; ``from .x import y`` gives ``("<package>.x", ["y"])``."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            yield base, [alias.name for alias in node.names]


def imports(name, path, known, top_level_only=False):
    """The mha_course modules that module ``name`` imports (relative imports resolved)."""
    found = set()
    for base, names in _import_statements(name, path, top_level_only):
        found |= {f"{base}.{n}" if f"{base}.{n}" in known else base for n in names} if names else {base}
    return {_known(target, known) for target in found if target.split(".")[0] == "mha_course"} - {name, None}


def _known(target, known):
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def layer_of(name):
    """The rank of module ``name``'s layer: the folder or file of the package it is in, else the commands'."""
    if name == "mha_course":
        return -1  # the package's docstring
    part = name.split(".")[1]
    return next((rank for rank, (_, parts) in enumerate(LAYERS) if part in parts), len(LAYERS))


def graph():
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def upward(edges):
    """``[(module, imported module)]`` of the imports that run up a layer."""
    return sorted((a, b) for a, targets in edges.items() for b in targets if layer_of(b) > layer_of(a))


def cycles(edges):
    """The import cycles of ``edges``, each as the list of its modules (Tarjan's strongly connected components)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_folder_is_a_layer():
    """A new folder of the package must say where it runs: it is a layer (the commands are files)."""
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert folders == {part for _, parts in LAYERS for part in parts if (PACKAGE / part).is_dir()}


def test_no_import_runs_up_a_layer():
    assert upward(graph()) == []


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_the_graded_kit_imports_only_itself_at_the_top():
    """What a grading kernel's graded kit holds of mha_course (``kernel/`` and ``wire.py``) imports nothing
    of it but itself at the top (the judge only where it is there: the learner's own environment)."""
    known = modules()
    kit = {name for name in known if name.startswith("mha_course.kernel")} | {"mha_course.wire"}
    for name in kit:
        assert imports(name, known[name], known, top_level_only=True) <= kit, name


@pytest.mark.parametrize("edges, bad", [
    ({"mha_course.judge.core": {"mha_course.grade.pipeline"}}, "upward"),  # the judge reaching for the pipeline
    ({"mha_course.wire": {"mha_course.kernel.cases"}}, "upward"),  # the wire format reaching for the kernel
    ({"mha_course.judge.core": {"mha_course.plugins.api"}}, "upward"),  # the judge reaching for nbgrader
    ({"mha_course.judge.questions": {"mha_course.judge.hints"}, "mha_course.judge.hints": {"mha_course.judge.core"},
      "mha_course.judge.core": {"mha_course.judge.questions"}}, "cycle"),  # a circle inside one layer
])
def test_the_checks_catch_an_upward_import_and_a_cycle(edges, bad):
    assert bool(upward(edges)) == (bad == "upward")
    assert cycles(edges) == ([sorted(edges)] if bad == "cycle" else [])


def test_imports_are_read_with_relative_imports_resolved():
    known = modules()
    assert imports("mha_course.judge.core", known["mha_course.judge.core"], known) >= {
        "mha_course.notebook", "mha_course.judge.questions", "mha_course.wire"}

# --- the browser invariant -----------------------------------------------------------------------------


def _imported(name, path):
    """Every module name that module ``name`` (at ``path``) imports, anywhere in the file, relative ones resolved."""
    return {m for base, names in _import_statements(name, path) for m in [base, *(f"{base}.{n}" for n in names)]}


def outside_imports(entries, root=PACKAGE.parent):
    """``{top-level module: a repository module that imports it}`` of what the modules ``entries`` import,
    followed through every module of the repository they reach (and the packages above it); ``mha_kit`` is
    not followed (the browser edition checks it on its own: ``import mha_kit`` needs only numpy there)."""
    todo, seen, outside = list(entries), set(), {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for target in sorted(_imported(name, module_path(root, name))):
            parts = target.split(".")
            inside = [m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if module_path(root, m)]
            if inside and parts[0] != "mha_kit":
                todo += inside
            else:
                outside.setdefault(parts[0], name)
    return outside


def not_in_the_browser(outside):
    """The entries of :func:`outside_imports` that are neither the standard library nor :data:`BROWSER_HAS`."""
    return {top: by for top, by in outside.items()
            if top not in BROWSER_HAS and top not in sys.stdlib_module_names and top != "__future__"}


def browser_side_modules():
    return [path.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for path in package_files(BROWSER_SIDE)]


def test_the_browser_side_imports_only_the_standard_library_numpy_ipython_and_mha_kit():
    """kernel/, judge/, wire.py, course.py and notebook.py, the assignments' questions, and all of mha_course they
    reach: nothing more."""
    names = browser_side_modules()
    assert {"mha_course.kernel.cases", "mha_course.kernel.watch", "mha_course.judge.core", "mha_course.judge.hints",
            "mha_course.wire", "mha_course.course", "mha_course.notebook"} <= set(names)
    questions = [f"solutions.{p.parent.name}.grading_questions" for p in PACKAGE.parent.glob("solutions/*/grading_questions.py")]
    assert len(questions) > 10  # the judge's questions, loaded by path: the browser edition packs them too
    outside = outside_imports(names + questions)
    assert {"numpy", "IPython"} <= set(outside)  # the walk reads the imports (a check that reads none passes)
    assert not_in_the_browser(outside) == {}


def test_the_browser_check_fails_when_a_kernel_side_module_imports_nbformat(tmp_path):
    """The same check on a copy of the browser side whose kernel/cases.py reads a notebook with nbformat (inside
    a function, as a lazy import would): it fails, naming nbformat and the module; and so it does when the
    import hides in another module of the repository that the kernel side reaches."""
    for part in BROWSER_SIDE:
        source = PACKAGE / part
        for path in (source.rglob("*.py") if source.is_dir() else [source]):
            copy = tmp_path / "mha_course" / path.relative_to(PACKAGE)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(path.read_text())
    (tmp_path / "mha_course" / "__init__.py").write_text("")
    entries = ["mha_course.kernel.cases", "mha_course.kernel.watch"]
    assert not_in_the_browser(outside_imports(entries, tmp_path)) == {}
    cases = tmp_path / "mha_course" / "kernel" / "cases.py"
    cases.write_text(cases.read_text() + "\n\ndef _read(path):\n    import nbformat\n    return nbformat.read(path, 4)\n")
    assert not_in_the_browser(outside_imports(entries, tmp_path)) == {"nbformat": "mha_course.kernel.cases"}
    cases.write_text(cases.read_text().replace("    import nbformat\n", "    from ..files import nbformat\n"))
    (tmp_path / "mha_course" / "files.py").write_text("import nbformat\n")
    assert not_in_the_browser(outside_imports(entries, tmp_path)) == {"nbformat": "mha_course.files"}
