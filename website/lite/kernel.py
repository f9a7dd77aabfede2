"""The browser edition's kernel: what it can import, what of the course it gets, and the packing.

The kernel of the browser edition (JupyterLite with jupyterlite-xeus-python, see website/lite/site.py)
runs a prebuilt environment that cannot be solved again: conda-style ``.tar.gz`` packages beside
``empack_env_meta.json``, each unpacked into the prefix at start. A pure-Python package packed the
same way (``lib/python3.11/site-packages/<package>/...``) and listed there is importable. Packed here:

* ``mha_kit``: the whole package, as a desktop learner has it. Its modules must import only what the
  browser has at import time (numpy and the standard library; matplotlib is not there, so
  ``mha_kit.plots`` is packed but not importable) - :func:`check_mha_kit`.
* ``mha_course``: what runs in the learner's own kernel, by the folder rule: the folders and files of
  :data:`mha_course.course.BROWSER_SIDE` whole (the kernel side a test cell imports, and the judge
  that judges it at once there, with the manifest and the notebook conventions they read), with the
  package's ``__init__.py`` - :func:`course_files`. Beside it, the questions of
  ``solutions/<assignment>/grading_questions.py`` (references and one-line diagnostics; no hidden
  test, no solution) and the released notebooks (which test builds on which answer).
* ``mha_lite`` (website/lite/mha_lite/): the page's own hook, loaded as an IPython extension, which
  names an answer that calls a reference the graded kernel switches off, as ``mha_course.check`` does.

``tests/test_layers.py`` proves that the browser side imports only the standard library, numpy,
IPython and ``mha_kit``. What the folder rule cannot say is checked here, on the files as packed, the
questions and the hook included (they live outside those folders): :func:`check_imports` reads every
import they make, inside functions too (a packed file's every function may run), and the build stops
with :class:`MissingModuleError` naming the import and the file if the browser's environment lacks it,
or if it is a module of ``mha_course`` that the folder rule does not pack.
"""

import ast
import functools
import gzip
import io
import json
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from mha_course import course

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The folder of the hook's package, :data:`HOOK` (website/lite/mha_lite), packed as a top-level package.
RUNTIME = Path(__file__).resolve().parent
SITE_PACKAGES = "lib/python3.11/site-packages"
META = "empack_env_meta.json"
#: The page's hook, a top-level package of the browser's kernel.
HOOK = "mha_lite"


class MissingModuleError(RuntimeError):
    """Code packed for the browser imports a module its environment does not have."""


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


# --- mha_kit, read with ast: what runs on import, what a call needs ---------------------------------


def _resolve(module, level, target, is_package):
    """The absolute name of a relative import ``from <level dots><target> import ...`` in ``module``."""
    if level == 0:
        return target
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def parse_file(path):
    """The ``ast`` tree of the Python file ``path``, parsed once per version of the file in a process (the
    site build and the browser edition's tests ask for mha_kit's modules again for every chapter and check).
    The tree is shared: read it, never change it."""
    path = Path(path)
    stat = path.stat()
    return _parse_file(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _parse_file(path, mtime_ns, size):
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)


@dataclass
class _Source:
    """One module read with ``ast``: its top-level definitions and the names its imports bind."""

    name: str
    path: Path
    tree: ast.Module = None
    defs: dict = field(default_factory=dict)  # name -> FunctionDef / ClassDef
    bindings: dict = field(default_factory=dict)  # local name -> (module, attribute or None)

    def __post_init__(self):
        self.tree = parse_file(self.path)
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


def module_path(root, module):
    """The file of the dotted module name ``module`` under ``root`` (a package's ``__init__.py``), or None."""
    base = Path(root).joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


class Package:
    """The modules of ``package`` under ``root``, read with ``ast`` as they are asked for, and the outside
    imports that :meth:`references` met (``outside``: ``[(imported module, (module, name) importing it)]``)."""

    def __init__(self, root, package):
        self.root, self.package = Path(root), package
        self.sources = {}
        self.outside = []

    def source(self, module):
        """The :class:`_Source` of ``module`` if it is a module of the package, else None."""
        if module.split(".")[0] != self.package:
            return None
        if module not in self.sources:
            path = module_path(self.root, module)
            self.sources[module] = _Source(module, path) if path else None
        return self.sources[module]

    def references(self, source, tree, node):
        """The nodes ``(module, name or None)`` of the package that the code ``tree`` of ``source`` names
        (imports, names, ``module.name``); its outside imports are recorded as needed by ``node``."""
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


def _join(module, attribute):
    return f"{module}.{attribute}" if attribute else module


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
    """Raise :class:`MissingModuleError` if ``import mha_kit`` needs a package the browser lacks.

    Only what runs on import counts: a function that imports an optional package (matplotlib in
    ``mha_kit.plots`` is a module of its own; ``ml_dtypes`` inside a function) fails only when called.
    """
    kit, todo, missing = Package(root, "mha_kit"), ["mha_kit"], set()
    seen = set(todo)
    while todo:
        source = kit.source(todo.pop())
        for stmt in import_time_imports(source.tree):
            for module, attribute in source.imported(stmt).values():
                for name in (_join(module, attribute), module):
                    if kit.source(name) is not None and name not in seen:
                        seen.add(name)
                        todo.append(name)
                        break
                else:
                    if kit.source(module) is None and not available(module, modules):
                        missing.add(module)
    if missing:
        raise MissingModuleError(f"import mha_kit needs {', '.join(missing)}, which the browser edition's kernel does "
                                 "not have (numpy 1.25 and the standard library only): import it lazily, inside the "
                                 "function that uses it")


def kit_needs(modules, root=REPO_ROOT):
    """``{public name of mha_kit: [packages]}`` for the functions and classes whose code imports, when
    called, a package the browser lacks (``ml_dtypes`` inside :func:`mha_kit.numerics.storage_dtype`,
    and everything that calls it). The calls are followed through mha_kit's own functions, not through
    module-level code (that part :func:`check_mha_kit` checks); a conservative answer: a function that
    needs the package for some arguments only (bf16, not fp32) is listed."""
    kit, needs = Package(root, "mha_kit"), {}
    for public, (module, attribute) in kit.source("mha_kit").bindings.items():
        todo, seen, missing = [(module, attribute)], set(), set()
        while todo:
            node = todo.pop()
            source = kit.source(node[0])
            if node in seen or source is None or node[1] not in source.defs:
                continue
            seen.add(node)
            before = len(kit.outside)
            todo += [t for t in kit.references(source, source.defs[node[1]], node) if t[1] is not None]
            missing |= {imported for imported, _ in kit.outside[before:] if not available(imported, modules)}
        if missing:
            needs[public] = sorted(missing)
    return needs


# --- the course: the folder rule, and the imports it cannot check ----------------------------------------


def course_files(root=REPO_ROOT):
    """``{module name: path}`` of what the page runs of ``mha_course``, by the folder rule: the folders and
    files of :data:`mha_course.course.BROWSER_SIDE` whole, and the package's ``__init__.py``."""
    paths = ["mha_course/__init__.py", *course.package_files(course.BROWSER_SIDE)]
    return {p.removesuffix(".py").removesuffix("/__init__").replace("/", "."): Path(root) / p for p in paths}


def imports(module, path):
    """``(imported module, names imported from it)`` of every import statement of the file ``path``, inside
    functions too, relative ones resolved (``module``: the file's module name)."""
    tree = parse_file(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names if alias.name != "*")
            yield _resolve(module, node.level, node.module, Path(path).name == "__init__.py"), names


def check_imports(files, modules, root=REPO_ROOT):
    """Raise :class:`MissingModuleError` if a file packed for the browser imports what its kernel will lack.

    ``files``: ``{module name: path}`` of the packed files (:func:`course_files`, the assignments' questions,
    the hook); ``modules``: what the browser can import (:func:`browser_modules` and the packed packages).
    A module of ``mha_course`` must be packed (the folder rule packs the browser side only); any other
    import must be :func:`available`. The error is one line, naming each such import and its file.
    """
    problems = []
    for name, path in files.items():
        for module, names in imports(name, path):
            if module.split(".")[0] == "mha_course":
                unpacked = [module] if module not in files else [
                    f"{module}.{n}" for n in names if f"{module}.{n}" not in files and module_path(root, f"{module}.{n}")]
                why = "which the browser edition does not pack (it packs mha_course.course.BROWSER_SIDE)"
            else:
                unpacked = [] if available(module, modules) else [module]
                why = "which the browser edition's kernel does not have (the standard library, numpy 1.25, IPython, mha_kit)"
            problems += [f"{_shown(path, root)} imports {m}, {why}" for m in unpacked]
    if problems:
        raise MissingModuleError("; ".join(dict.fromkeys(problems)))


def _shown(path, root):
    """``path`` as the error names it: relative to ``root`` or to the repository, if inside."""
    for base in (Path(root), REPO_ROOT):
        if Path(path).is_relative_to(base):
            return Path(path).relative_to(base).as_posix()
    return str(path)


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
