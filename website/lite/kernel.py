"""The browser edition's kernel: what it can import, what of the course it needs, and the packing.

The kernel of the browser edition (JupyterLite with jupyterlite-xeus-python, see website/lite/site.py)
runs a prebuilt environment that cannot be solved again: conda-style ``.tar.gz`` packages beside
``empack_env_meta.json``, each unpacked into the prefix at start. A pure-Python package packed the
same way (``lib/python3.11/site-packages/<package>/...``) and listed there is importable. Packed here:

* ``mha_kit``: the whole package, as a desktop learner has it. Its modules must import only what the
  browser has at import time (numpy and the standard library; matplotlib is not there, so
  ``mha_kit.plots`` is packed but not importable) - :func:`check_mha_kit`.
* ``mha_course``: exactly the modules the kernel-side judge reaches (:func:`kernel_closure`): a test
  cell's ``run`` judges at once in the learner's own kernel, as on the desktop, with the questions
  of ``solutions/<assignment>/grading_questions.py`` (references and one-line diagnostics; no
  hidden test, no solution) and the released notebooks (which test builds on which answer).
* ``mha_lite`` (website/lite/mha_lite/): the page's own hook, loaded as an IPython extension, which
  names an answer that calls a reference the graded kernel switches off, as ``mha_course.check`` does.

The closure follows the code, not a list of modules: starting from the entry points, a module's
body and every function or class it names (through imports, at module level or inside functions)
is reached, recursively, within ``mha_course``. Every import outside ``mha_course`` made by reached
code must exist in the browser's environment; if one does not (nbformat, nbgrader ...), the build
stops with :class:`ClosureError` naming the import, the code that makes it and the path to it.
"""

import ast
import gzip
import io
import json
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from mha_course.course import kernel_side_modules

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The folder of the hook's package, :data:`HOOK` (website/lite/mha_lite), packed as a top-level package.
RUNTIME = Path(__file__).resolve().parent
SITE_PACKAGES = "lib/python3.11/site-packages"
META = "empack_env_meta.json"
#: What a learner's exercise imports: the kernel side, the folder mha_course/kernel/ with wire.py
#: (:func:`mha_course.course.kernel_side_modules`); 04's test of Q5 imports kernel.watch.
ENTRY_MODULES = tuple(kernel_side_modules())
#: The kernel side's other entry points: the page's hook, and the files the judge loads by path.
HOOK = "mha_lite"


class ClosureError(RuntimeError):
    """The kernel-side code needs a module the browser's environment does not have."""


# --- what the browser has -------------------------------------------------------------------------


def archive_names(path):
    """The member names of a ``.tar.gz`` package."""
    with tarfile.open(path, "r:gz") as archive:
        return archive.getnames()


def browser_modules(static_dir):
    """Top-level module names importable in the browser's environment (the packages of ``empack_env_meta.json``)."""
    meta = json.loads((Path(static_dir) / META).read_text(encoding="utf-8"))
    names = set()
    for package in meta["packages"]:
        for member in archive_names(Path(static_dir) / package["filename"]):
            parts = member.split("/")
            if parts[:2] == ["lib", "python3.11"] and len(parts) > 2:
                rest = parts[3:] if parts[2] in ("site-packages", "lib-dynload") else parts[2:]
                if rest and rest[0] not in ("site-packages", "lib-dynload"):
                    names.add(rest[0].split(".")[0])
    return names


def _local_source(name):
    """Whether the standard library module ``name`` is Python source here (not a C module, which the
    browser's interpreter has built in)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None and spec.origin.endswith(".py")


def available(name, modules):
    """Whether the browser can import top-level module ``name``: packed, or a built-in module."""
    top = name.split(".")[0]
    if top in modules or top in sys.builtin_module_names:
        return True
    # C modules of the standard library are built into the browser's interpreter; a module written
    # in Python here must be a file there too.
    return top in sys.stdlib_module_names and not _local_source(top)


# --- the closure ----------------------------------------------------------------------------------


def _resolve(module, level, target, is_package):
    """The absolute name of a relative import ``from <level dots><target> import ...`` in ``module``."""
    if level == 0:
        return target
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


@dataclass
class _Source:
    """One module read with ``ast``: its top-level definitions and the names its imports bind."""

    name: str
    path: Path
    tree: ast.Module = None
    defs: dict = field(default_factory=dict)  # name -> FunctionDef / ClassDef
    bindings: dict = field(default_factory=dict)  # local name -> (module, attribute or None)

    def __post_init__(self):
        self.tree = ast.parse(self.path.read_text(encoding="utf-8"), filename=str(self.path))
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[stmt.name] = stmt
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.bindings.update(self.imported(stmt))

    @property
    def is_package(self):
        return self.path.name == "__init__.py"

    def imported(self, stmt):
        """``{local name: (module, attribute or None)}`` that an import statement binds."""
        if isinstance(stmt, ast.Import):
            return {(a.asname or a.name.split(".")[0]): (a.name if a.asname else a.name.split(".")[0], None)
                    for a in stmt.names}
        module = _resolve(self.name, stmt.level, stmt.module, self.is_package)
        return {(a.asname or a.name): (module, a.name) for a in stmt.names if a.name != "*"}

    def module_level(self):
        """The statements that run on import, less the bodies of functions (classes run whole)."""
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from stmt.decorator_list
                yield from stmt.args.defaults + [d for d in stmt.args.kw_defaults if d is not None]
            else:
                yield stmt


class Closure:
    """The code of ``package`` reached from some entry points, and the outside imports it makes."""

    def __init__(self, root=REPO_ROOT, package="mha_course"):
        self.root, self.package = Path(root), package
        self.sources = {}
        self.reached = {}  # (module, name or None) -> the node it was reached from
        self.outside = []  # (imported module, (module, name) that imports it)

    def source(self, module):
        """The :class:`_Source` of ``module`` if it is a module of the package (or added), else None."""
        if module in self.sources:
            return self.sources[module]
        if module.split(".")[0] != self.package:
            return None
        if module not in self.sources:
            base = self.root.joinpath(*module.split("."))
            path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
            self.sources[module] = _Source(module, path) if path.is_file() else None
        return self.sources[module]

    def add_file(self, name, path):
        """An extra module read from ``path`` (a file the judge loads by path), reached whole."""
        self.sources[name] = _Source(name, Path(path))
        self.visit((name, None), None)
        for definition in self.sources[name].defs:
            self.visit((name, definition), (name, None))

    def visit(self, node, parent):
        todo = [(node, parent)]
        while todo:
            node, parent = todo.pop()
            if node in self.reached:
                continue
            self.reached[node] = parent
            todo.extend((target, node) for target in self.edges(node))

    def edges(self, node):
        """The nodes ``node``'s code reaches, and the parents of a module (importing it runs them)."""
        module, name = node
        source = self.source(module)
        if source is None:
            return []
        parent = module.rpartition(".")[0]
        targets = [(parent, None)] if parent and self.source(parent) else []
        if name is None:
            statements = list(source.module_level())
        elif name in source.defs:
            statements = [source.defs[name]]
        else:
            return targets + [(f"{module}.{name}", None)] if self.source(f"{module}.{name}") else targets
        for stmt in statements:
            targets += self.references(source, stmt, node)
        return targets

    def references(self, source, tree, node):
        targets = []
        for item in ast.walk(tree):
            if isinstance(item, (ast.Import, ast.ImportFrom)):
                for module, attribute in source.imported(item).values():
                    targets += self.binding(module, attribute, node)
            elif isinstance(item, ast.Name):
                if item.id in source.defs:
                    targets.append((source.name, item.id))
                elif item.id in source.bindings:
                    targets += self.binding(*source.bindings[item.id], node, record=False)
            elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name):
                module, attribute = source.bindings.get(item.value.id, (None, None))
                if module and self.source(_join(module, attribute)):
                    targets.append((_join(module, attribute), item.attr))
        return targets

    def binding(self, module, attribute, node, record=True):
        """The nodes an imported name stands for; an outside import is recorded as needed by ``node``."""
        if self.source(module) is None:
            if record:
                self.outside.append((_join(module, attribute) if attribute and module else module, node))
            return []
        if attribute and self.source(f"{module}.{attribute}"):
            return [(module, None), (f"{module}.{attribute}", None)]
        return [(module, None)] + ([(module, attribute)] if attribute else [])

    def modules(self):
        """The package's modules whose code is reached (each packed whole), sorted."""
        return sorted({m for m, _ in self.reached if self.source(m) is not None and m.split(".")[0] == self.package})

    def path_to(self, node):
        """``a -> b -> c``: how ``node`` was reached from an entry point."""
        steps = []
        while node is not None:
            steps.append(_label(node))
            node = self.reached.get(node)
        return " -> ".join(reversed(steps))


def _join(module, attribute):
    return f"{module}.{attribute}" if attribute else module


def _label(node):
    module, name = node
    return f"{module}.{name}" if name else module


def kernel_closure(modules, root=REPO_ROOT, extra_files=()):
    """The :class:`Closure` of the kernel side; raise :class:`ClosureError` if it needs what the browser lacks.

    ``modules``: the browser's top-level module names (:func:`browser_modules`, plus what is packed);
    ``extra_files``: ``[(module name, path)]`` of files loaded by path (the questions, the hook).
    """
    closure = Closure(root)
    for entry in ENTRY_MODULES:
        closure.visit((entry, None), None)
        source = closure.source(entry)
        for name in source.defs if source else ():
            if not name.startswith("_"):
                closure.visit((entry, name), (entry, None))
    for name, path in extra_files:
        closure.add_file(name, path)
    missing = [(imported, node) for imported, node in closure.outside if not available(imported, modules)]
    if missing:
        lines = [f"  {imported} (imported by {_label(node)}; reached as {closure.path_to(node)})"
                 for imported, node in missing]
        raise ClosureError("the browser edition's kernel cannot import what the kernel-side judge needs:\n"
                           + "\n".join(lines) + "\nthe browser has only the packages of its prebuilt environment "
                           "(numpy, IPython, the standard library); import these lazily, in code the page never runs, "
                           "or keep them out of the judge's modules")
    return closure


def import_time_imports(tree):
    """The import statements of a module that run when it is imported (none inside a function)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def check_mha_kit(modules, root=REPO_ROOT):
    """Raise :class:`ClosureError` if ``import mha_kit`` needs a package the browser lacks.

    Only what runs on import counts: a function that imports an optional package (matplotlib in
    ``mha_kit.plots`` is a module of its own; ``ml_dtypes`` inside a function) fails only when called.
    """
    closure, todo, missing = Closure(root, package="mha_kit"), ["mha_kit"], set()
    seen = set(todo)
    while todo:
        source = closure.source(todo.pop())
        for stmt in import_time_imports(source.tree):
            for module, attribute in source.imported(stmt).values():
                for name in (_join(module, attribute), module):
                    if closure.source(name) is not None and name not in seen:
                        seen.add(name)
                        todo.append(name)
                        break
                else:
                    if closure.source(module) is None and not available(module, modules):
                        missing.add(module)
    if missing:
        raise ClosureError(f"import mha_kit needs {', '.join(missing)}, which the browser edition's kernel does not "
                           "have (numpy 1.25 and the standard library only): import it lazily, inside the function "
                           "that uses it")


def kit_needs(modules, root=REPO_ROOT):
    """``{public name of mha_kit: [packages]}`` for the functions and classes whose code imports, when
    called, a package the browser lacks (``ml_dtypes`` inside :func:`mha_kit.numerics.storage_dtype`,
    and everything that calls it). The calls are followed through mha_kit's own functions, not through
    module-level code (that part :func:`check_mha_kit` checks); a conservative answer: a function that
    needs the package for some arguments only (bf16, not fp32) is listed."""
    closure, needs = Closure(root, package="mha_kit"), {}
    for public, (module, attribute) in closure.source("mha_kit").bindings.items():
        todo, seen, missing = [(module, attribute)], set(), set()
        while todo:
            node = todo.pop()
            source = closure.source(node[0])
            if node in seen or source is None or node[1] not in source.defs:
                continue
            seen.add(node)
            before = len(closure.outside)
            todo += [t for t in closure.references(source, source.defs[node[1]], node) if t[1] is not None]
            missing |= {imported for imported, _ in closure.outside[before:] if not available(imported, modules)}
        if missing:
            needs[public] = sorted(missing)
    return needs


# --- packing ----------------------------------------------------------------------------------------


def tar_gz(files, mtime=0):
    """A reproducible ``.tar.gz`` (bytes) of ``{member name: bytes}``, members sorted."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), mtime, 0o644
            archive.addfile(info, io.BytesIO(files[name]))
    return gzip.compress(raw.getvalue(), mtime=mtime)


def package_files(root, packages):
    """``{site-packages member: bytes}`` of whole package folders (``.py`` files only)."""
    files = {}
    for package in packages:
        for path in sorted((Path(root) / package).rglob("*.py")):
            files[f"{SITE_PACKAGES}/{path.relative_to(root).as_posix()}"] = path.read_bytes()
    return files


def module_files(root, modules):
    """``{site-packages member: bytes}`` of the given modules (dotted names) of the repository."""
    files = {}
    for module in modules:
        base = Path(root).joinpath(*module.split("."))
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        files[f"{SITE_PACKAGES}/{path.relative_to(root).as_posix()}"] = path.read_bytes()
    return files


def add_package(static_dir, name, version, files, mtime=0):
    """Write ``<name>-<version>-mha_0.tar.gz`` into the kernel's folder and list it in ``empack_env_meta.json``."""
    stem = f"{name}-{version}-mha_0"
    (Path(static_dir) / f"{stem}.tar.gz").write_bytes(tar_gz(files, mtime))
    meta_path = Path(static_dir) / META
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["packages"] = [p for p in meta["packages"] if p["name"] != name] + [
        {"name": name, "version": version, "build": "mha_0", "filename_stem": stem, "filename": f"{stem}.tar.gz"}]
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return f"{stem}.tar.gz"
