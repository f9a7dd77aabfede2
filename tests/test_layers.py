"""No import in mha_course runs back up a layer, and none closes a cycle.

The course tools are layers, lowest first; a module imports only modules of its own layer or of the
layers below it, at the top of the file or inside a function alike (an import inside a function
that runs back up a layer hides a cycle all the same). Every module of ``mha_course`` must be in a
layer. The graph is read with ``ast``: nothing is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mha_course

PACKAGE = Path(mha_course.__file__).resolve().parent

#: The layers, lowest first: (name, module prefixes).
LAYERS = [
    ("the course manifest", ("mha_course.course", "mha_course.numpy2")),
    ("the notebook conventions", ("mha_course.notebook",)),
    ("the judge", ("mha_course.judge",)),
    ("what nbgrader_config.py plugs in", ("mha_course.trusted", "mha_course.feedback")),
    ("the pipeline", ("mha_course.pipeline", "mha_course.intake", "mha_course.pool", "mha_course.records",
                      "mha_course.similarity")),
    ("the commands", ("mha_course.check", "mha_course.selfgrade", "mha_course.safegrade", "mha_course.release",
                      "mha_course.lab")),
]
#: Copied as they are into the grading kernel's graded kit, beside no other module of mha_course: at the
#: top of the file they import nothing of it but each other (the kernel side imports the judge only
#: inside a function, guarded, for the learner's own environment).
KERNEL_SIDE = {"mha_course.judge", "mha_course.judge.cases", "mha_course.judge.wire", "mha_course.judge.watch",
               "mha_course.numpy2"}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules():
    """``{module name: path}`` of every module of mha_course (not the sandboxed kernel's stand-ins)."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "kernel_path" not in p.parts}


def imports(name, path, known, top_level_only=False):
    """The mha_course modules that module ``name`` imports (relative imports resolved)."""
    tree, found = ast.parse(path.read_text()), set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    return {_known(target, known) for target in found if target.split(".")[0] == "mha_course"} - {name, None}


def _known(target, known):
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def layer_of(name):
    if name == "mha_course":
        return -1  # the package's docstring
    ranks = [rank for rank, (_, prefixes) in enumerate(LAYERS)
             for prefix in prefixes if name == prefix or name.startswith(prefix + ".")]
    return max(ranks, default=None)


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


def test_every_module_is_in_a_layer():
    assert [name for name in modules() if layer_of(name) is None] == []


def test_no_import_runs_up_a_layer():
    assert upward(graph()) == []


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_the_kernel_side_imports_only_itself_at_the_top():
    known = modules()
    for name in KERNEL_SIDE:
        assert imports(name, known[name], known, top_level_only=True) <= KERNEL_SIDE, name


@pytest.mark.parametrize("edges, bad", [
    ({"mha_course.judge.core": {"mha_course.pipeline"}}, "upward"),  # the judge reaching for the pipeline
    ({"mha_course.judge.cases": {"mha_course.judge.carry"}, "mha_course.judge.carry": {"mha_course.judge.core"},
      "mha_course.judge.core": {"mha_course.judge.cases"}}, "cycle"),  # the circle this test was written against
])
def test_the_checks_catch_an_upward_import_and_a_cycle(edges, bad):
    assert bool(upward(edges)) == (bad == "upward")
    assert cycles(edges) == ([sorted(edges)] if bad == "cycle" else [])


def test_imports_are_read_with_relative_imports_resolved():
    known = modules()
    assert imports("mha_course.judge.core", known["mha_course.judge.core"], known) >= {
        "mha_course.notebook", "mha_course.judge.questions", "mha_course.judge.wire"}
