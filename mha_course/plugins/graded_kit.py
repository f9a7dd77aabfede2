"""The graded kit: the ``mha_kit`` (and ``mha_course``) a grading kernel may import for one assignment.

``build(assignment, dest)`` writes ``dest/mha_kit`` and ``dest/mha_course``; put ``dest`` first on
the grading kernel's ``PYTHONPATH``. The kit's ``mha_kit`` is the real package tree-shaken with
``ast``: every module keeps the public functions and classes that use no reference answer of the
assignment (configs, presets, toy data, units, figures, and the helpers the course manifest
:data:`mha_course.course.COURSE` allows it) with the private code they need, and nothing else. Every
other public function becomes a stub raising ``NotAvailableError`` with the rule
(``mk.split_heads is not available in 01_shapes: it is what Q3 asks you to write``), so the
question that calls it fails with that message. Its ``mha_course`` holds the kernel side only: the
folder ``kernel/`` whole and the format it sends (:data:`mha_course.course.KERNEL_SIDE`).

(Not to be confused with the site's learner edition, the book built without its solutions.)

    python -m mha_course.plugins.graded_kit 04_implement_attention /tmp/kit
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import json
import shutil
import sys
from pathlib import Path

from ..course import BASE_HELPERS, COURSE, KERNEL_SIDE, package_files

#: The real ``mha_kit`` package, which the kit is cut from.
PACKAGE = Path(importlib.util.find_spec("mha_kit").origin).parent
#: The folder holding the real ``mha_course``, whose kernel side the kit copies.
COURSE_ROOT = Path(__file__).resolve().parent.parent.parent


class _Module:
    """One real ``mha_kit`` module, read with ``ast``: its statements, symbols and dependencies."""

    def __init__(self, path):
        self.name = path.stem
        self.source = path.read_text()
        self.lines = self.source.splitlines()
        self.tree = ast.parse(self.source)
        self.symbols, self.imports = {}, {}  # name -> statement; local name -> (module, name)
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.level == 1:
                for alias in stmt.names:
                    self.imports[alias.asname or alias.name] = (stmt.module or alias.name, alias.name)
            for name in _defined(stmt):
                self.symbols[name] = stmt

    def text(self, stmt):
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        return "\n".join(self.lines[first - 1:stmt.end_lineno])

    def deps(self, stmt):
        """``{(module, name)}`` a statement uses: names of this module, relative imports, inner imports."""
        out = set()
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id in self.symbols and stmt is not self.symbols[node.id]:
                out.add((self.name, node.id))
            elif isinstance(node, ast.Name) and node.id in self.imports:
                out.add(self.imports[node.id])
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node is not stmt:
                out.update((node.module, alias.name) for alias in node.names)
        return out


def _module(path):
    """The :class:`_Module` of ``path``, parsed once per version of the file in a process (a kit per
    assignment re-reads every module: 13 assignments parsed them 13 times, 2 CPU-seconds)."""
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _parsed(path, mtime_ns, size):
    return _Module(path)


def _defined(stmt):
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _exports(init):
    """``{name: (module, name)}`` that the real ``mha_kit/__init__.py`` exports (modules as ``(name, None)``)."""
    out = {}
    for stmt in ast.parse(init.read_text()).body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 1:
            for alias in stmt.names:
                out[alias.asname or alias.name] = (alias.name, None) if stmt.module is None else (stmt.module, alias.name)
    return out


def _asks(questions):
    """``"Q3 asks"``, ``"Q4 and Q7 ask"``: the questions of the manifest, with the verb they take."""
    return f"{questions} {'ask' if ' and ' in questions or ' to ' in questions else 'asks'}"


def _message(assignment, name, answers, allowed):
    if name in answers:
        return f"mk.{name} is not available in {assignment}: it is what {_asks(answers[name])} you to write"
    return (f"mk.{name} is not available in {assignment}: its questions allow only the configs, presets, "
            f"toy data and {', '.join('mk.' + n for n in sorted(allowed - set(BASE_HELPERS))) or 'no other helpers'}")


class _Kit:
    """The tree-shaking of the real package for one assignment."""

    def __init__(self, assignment, package=PACKAGE):
        self.assignment = assignment
        self.modules = {p.stem: _module(p) for p in sorted(package.glob("*.py")) if p.stem != "__init__"}
        self.exports = _exports(package / "__init__.py")
        self.allowed = set(BASE_HELPERS) | set(COURSE[assignment].helpers)
        unknown = self.allowed - set(self.exports)
        if unknown:
            raise ValueError(f"the manifest allows {sorted(unknown)} in {assignment}, which mha_kit does not export")
        self.forbidden = {self.exports[n]: n for n in self.exports if n not in self.allowed and self.exports[n][1]}
        self._taint = {}

    def taint(self, key, seen=()):
        """The forbidden export ``key`` relies on (a name such as ``"split_heads"``), or None."""
        if key in self.forbidden:
            return self.forbidden[key]
        if key not in self._taint:
            module, name = key
            mod = self.modules.get(module)
            if mod is None or name not in mod.symbols or key in seen:
                return None
            self._taint[key] = next((t for dep in sorted(mod.deps(mod.symbols[name]))
                                     if (t := self.taint(dep, (*seen, key)))), None)
        return self._taint[key]

    def kept(self):
        """Every ``(module, name)`` the kit keeps: the untainted public symbols and what they use."""
        todo = [(m, n) for m, mod in self.modules.items() for n in mod.symbols
                if not n.startswith("_") and not self.taint((m, n))]
        kept = set()
        while todo:
            key = todo.pop()
            mod = self.modules.get(key[0])
            if key in kept or mod is None or key[1] not in mod.symbols:
                continue
            kept.add(key)
            todo.extend(mod.deps(mod.symbols[key[1]]))
        return kept

    def message(self, key):
        """The rule a stub for ``key`` (a ``(module, name)`` or an export name) raises."""
        name = key if isinstance(key, str) else self.forbidden.get(key)
        if name is not None:
            return _message(self.assignment, name, COURSE[self.assignment].answers, self.allowed)
        used, answers = self.taint(key), COURSE[self.assignment].answers
        why = f"which {_asks(answers[used])} you to write" if used in answers else "which this assignment does not allow"
        return f"mha_kit.{key[0]}.{key[1]} is not available in {self.assignment}: it uses mk.{used}, {why}"

    def module_source(self, mod, kept):
        """The kit's version of one module: kept statements as written, stubs for the rest."""
        parts, public = [], {n for (m, n) in kept if m == mod.name} | set(self.stubs(mod))
        for i, stmt in enumerate(mod.tree.body):
            if isinstance(stmt, ast.ImportFrom) and stmt.level == 1:
                target = self.modules[stmt.module] if stmt.module else None
                names = [a for a in stmt.names if target is None or (stmt.module, a.name) in kept
                         or a.name in self.stubs(target)]
                if names:
                    parts.append(ast.unparse(ast.ImportFrom(module=stmt.module, names=names, level=1)))
            elif not _defined(stmt) or any(n in public and (mod.name, n) in kept for n in _defined(stmt)):
                parts.append(mod.text(stmt))
        stubs = self.stubs(mod)
        if stubs:
            call = ast.Call(func=ast.Name("_stub"), args=[ast.Call(ast.Name("globals"), [], []), ast.Constant(mod.name),
                                                          ast.List([ast.Constant(n) for n in stubs])], keywords=[])
            parts.append(ast.unparse(ast.Module([ast.ImportFrom("_kit", [ast.alias("stub", "_stub")], 1),
                                                 ast.Expr(call)], [])))
        return "\n\n".join(parts) + "\n"

    def stubs(self, mod):
        """Public names of ``mod`` that use a forbidden reference (they become stubs)."""
        return [n for n in mod.symbols if not n.startswith("_") and self.taint((mod.name, n))]

    def init_source(self):
        """``mha_kit/__init__.py`` of the kit: the allowed names, and a ``__getattr__`` that says the rule."""
        body = [ast.Expr(ast.Constant(f"Graded kit of mha_kit for {self.assignment} "
                                      "(made by mha_course.plugins.graded_kit): only the helpers this assignment allows."))]
        for module in self.modules:
            names = sorted(n for n in self.allowed if self.exports[n] == (module, n) or self.exports[n][0] == module
                           and self.exports[n][1])
            if names:
                body.append(ast.ImportFrom(module, [ast.alias(self.exports[n][1], None if self.exports[n][1] == n else n)
                                                    for n in names], 1))
        modules = sorted(n for n in self.allowed if self.exports[n][1] is None)
        body.append(ast.ImportFrom(None, [ast.alias(n) for n in modules], 1))
        body.append(ast.ImportFrom("_kit", [ast.alias("NotAvailableError"),
                                                ast.alias("module_getattr", "__getattr__")], 1))
        body.append(ast.Assign([ast.Name("__all__")], ast.List([ast.Constant(n) for n in sorted(self.allowed)]), lineno=0))
        return ast.unparse(ast.fix_missing_locations(ast.Module(body, []))) + "\n"

    def rules(self):
        messages = {name: self.message(name) for name in self.exports if name not in self.allowed}
        for mod in self.modules.values():
            messages.update({f"{mod.name}.{n}": self.message((mod.name, n)) for n in self.stubs(mod)})
        return {"assignment": self.assignment, "refused": sorted(n for n in self.exports if n not in self.allowed),
                "messages": messages}


def refused(assignment):
    """``{mk name: rule}`` of the ``mha_kit`` exports the graded kit of ``assignment`` switches off."""
    kit = _Kit(assignment)
    return {name: kit.message(name) for name in kit.exports if name not in kit.allowed and kit.exports[name][1]}


def build(assignment, dest):
    """Write the graded kit of ``assignment`` into ``dest`` (``dest/mha_kit``, ``dest/mha_course``).

    Returns ``dest``, the folder to put first on the grading kernel's ``PYTHONPATH``.
    """
    if assignment not in COURSE:
        raise ValueError(f"unknown assignment {assignment!r}; the course manifest has {', '.join(COURSE)}")
    dest, kit = Path(dest), _Kit(assignment)
    kept = kit.kept()
    package, course = dest / "mha_kit", dest / "mha_course"
    for folder in (package, course):
        shutil.rmtree(folder, ignore_errors=True)
    package.mkdir(parents=True)
    for mod in kit.modules.values():
        (package / f"{mod.name}.py").write_text(kit.module_source(mod, kept))
    (package / "__init__.py").write_text(kit.init_source())
    shutil.copyfile(Path(__file__).with_name("graded_kit_runtime.py"), package / "_kit.py")
    (package / "_kit.json").write_text(json.dumps(kit.rules(), indent=1))
    (course / "judge").mkdir(parents=True)
    (course / "__init__.py").write_text('"""The kernel side of the course tools: mha_course.kernel only."""\n')
    # an empty judge: where the real package is installed too (editable), its judge stays out of the kernel
    (course / "judge" / "__init__.py").write_text('"""No judge here: the grading process judges, outside the kernel."""\n')
    for name in package_files(KERNEL_SIDE):  # mha_course/kernel/cases.py ...
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(COURSE_ROOT / name, dest / name)
    return dest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m mha_course.plugins.graded_kit ASSIGNMENT DEST", file=sys.stderr)
        return 2
    print(build(argv[0], argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
