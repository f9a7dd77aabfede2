"""Read a submitted notebook without running it, and rebuild it on the instructor's cells.

:func:`rebuild` never trusts the file's structure: the notebook that gets executed is the
instructor's release with the learner's *answer* cells put in by ``grade_id`` (and the learner's
own extra code cells kept after the answer they follow). Test cells, their metadata and checksums
always come from the source, so editing, deleting, reordering or forging them earns nothing; each
such change is still reported, with a flag for manual review.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re

import nbformat

#: A notebook larger than this is not read (exercise notebooks are well under 1 MiB).
MAX_BYTES = 20 * 1024**2

#: Modules an answer may import: the ones the exercises are about, and a few harmless standard ones
#: (``functools``, ``operator``, ``typing``, ``string`` reach any attribute by a string: not here).
ALLOWED_IMPORTS = {"numpy", "math", "mha_kit", "itertools", "collections", "fractions"}
#: Names that reach the interpreter, the files or IPython rather than compute (``In``, ``_ih``: the
#: text of the cells, hidden tests included; ``quit``/``exit``: a handle on the shell).
REACHING_NAMES = {"exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "locals",
                  "vars", "open", "breakpoint", "input", "get_ipython", "__builtins__", "memoryview", "help",
                  "quit", "exit", "In", "Out", "_ih", "_oh", "_dh", "_ii", "_iii", "__", "___", "display",
                  "update_wrapper", "wraps", "attrgetter", "methodcaller", "get_type_hints", "Formatter"}
#: Attributes that lead from a module or an object to the interpreter: modules, streams, frames,
#: code, and the IPython shell's machinery.
REACHING_ATTRIBUTES = {"sys", "os", "builtins", "modules", "stdout", "stderr", "stdin", "io", "ctypes", "ctypeslib",
                       "gc", "subprocess", "importlib", "inspect", "threading", "signal", "socket", "posix",
                       "shutil", "pathlib", "tempfile", "pickle", "marshal", "types", "runpy", "mmap", "resource",
                       "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "cr_frame", "ag_frame",
                       "tb_frame", "tb_next", "co_code", "co_consts", "func_globals", "system", "popen", "fork",
                       "events", "history_manager", "user_ns", "user_global_ns", "ex", "ev", "run_cell",
                       "run_cell_async", "run_code", "showtraceback", "displayhook", "display_pub", "kernel", "shell",
                       "register", "payload_manager", "execution_count"}
COMPARISONS = {"__eq__", "__ne__", "__bool__", "__index__", "__int__", "__float__", "__instancecheck__",
               "__subclasscheck__", "__array__", "__array_ufunc__", "__array_function__", "__hash__"}
#: Methods that change a table or an array in place: called on anything imported, they change what
#: the tests compare with (``mk.PRESETS.update(...)``).
MUTATORS = {"update", "clear", "pop", "popitem", "setdefault", "append", "extend", "insert", "remove", "sort",
            "reverse", "fill", "put", "itemset", "resize", "setflags", "add", "discard", "seterr", "seterrcall",
            "set_printoptions", "setbufsize"}
#: The modules a protected name may be bound to again (``import numpy as np`` in an answer is fine).
SAME_BINDING = {"np": "numpy", "numpy": "numpy", "mk": "mha_kit", "mha_kit": "mha_kit", "math": "math"}
_INPUT_NAME = re.compile(r"_i\d+")


def setup_names(setup):
    """Names a setup cell binds (``import numpy as np`` -> ``np``), read with ``ast``."""
    names = []
    for node in ast.walk(ast.parse(setup)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    return names


def protected_names(setup):
    """What an answer must not rebind or assign into: the setup cell's names, and the modules."""
    return {"numpy", "mha_kit", "math", *setup_names(setup)}


def scan(source, protected=()):
    """Why ``source`` (a learner's cell) needs a person's review: ``[reason, ...]``, empty if nothing.

    The exercises need none of what is flagged: imports beyond numpy and the standard library's
    arithmetic (or of private modules and names), dynamic attribute access, private and dunder
    attributes, the interpreter's modules, streams and frames, IPython's shell and cell history,
    shell and magic commands, classes that act as numbers or override comparisons (also made with
    ``type()``), assignments into anything imported, into attributes of other objects, or over the
    names the instructor's setup cell binds (``protected``). The cell is read as IPython reads it,
    then with ``ast``, so spelling tricks (aliases, magics) do not hide anything.
    """
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError) as error:
        return [f"cannot be read as Python ({type(error).__name__})"]
    imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    reasons = [why for node in ast.walk(tree) for why in _node_reasons(node, set(protected), imported)]
    return sorted(set(reasons), key=reasons.index)


def _node_reasons(node, protected, imported):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_reasons(node, protected)
    if isinstance(node, ast.Name) and (node.id in REACHING_NAMES or _INPUT_NAME.fullmatch(node.id)):
        return [f"uses {node.id}"]
    if isinstance(node, ast.Name) and node.id in protected and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [f"rebinds {node.id}"]
    if isinstance(node, ast.Attribute) and (node.attr in REACHING_ATTRIBUTES or node.attr.startswith("_")):
        return [f"reaches into .{node.attr}"]
    if isinstance(node, ast.Attribute) and node.attr in REACHING_NAMES:
        return [f"uses {node.attr}"]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _reaching_text(node.value):
        return [f"names {node.value[:40]!r} in a string"]
    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return _store_reasons(node, protected, imported)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in protected:
        return [f"rebinds {node.name}"]
    if isinstance(node, ast.ClassDef):
        return _class_reasons(node)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "type" and len(node.args) == 3:
        return ["makes a class with type()"]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        root = _root(node.func)
        return [f"changes {root} in place (.{node.func.attr})"] if root in protected or root in imported else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [f"rebinds {n} (global)" for n in node.names if n in protected]
    return []


def _reaching_text(text):
    """A string that names what the scan flags as code (``"__globals__"``, ``"cache.os"``)."""
    parts = text.split(".")
    return "__" in text or all(p.isidentifier() for p in parts) and any(
        p.startswith("_") or p in REACHING_ATTRIBUTES or p in REACHING_NAMES for p in parts)


def _import_reasons(node, protected):
    """An import of a module outside :data:`ALLOWED_IMPORTS`, of a private one or of a private or
    reaching name, or one that binds a protected name to something else."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level or module.split(".")[0] not in ALLOWED_IMPORTS or _private(module):
            return [f"imports from {module or '.'}"]
        bad = [a.name for a in node.names if a.name.startswith("_") or a.name in REACHING_ATTRIBUTES]
        return [f"imports {name} from {module}" for name in bad] + \
            [f"rebinds {a.asname or a.name}" for a in node.names if (a.asname or a.name) in protected]
    reasons = [f"imports {a.name}" for a in node.names if a.name.split(".")[0] not in ALLOWED_IMPORTS or _private(a.name)]
    return reasons + [f"rebinds {a.asname}" for a in node.names
                      if a.asname in protected and SAME_BINDING.get(a.asname) != a.name]


def _private(dotted):
    return any(part.startswith("_") for part in dotted.split("."))


def _class_reasons(node):
    """A class with any base but ``object`` (an alias of ``int`` is still ``int``), a metaclass, or a
    comparison or identity dunder defined in its body, by ``def`` or by assignment."""
    bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "a computed base") for b in node.bases]
    reasons = [f"class {node.name} subclasses {b}" for b in bases if b != "object"]
    reasons += [f"class {node.name} has a metaclass" for k in node.keywords if k.arg == "metaclass"]
    named = [f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    named += [t.id for a in node.body if isinstance(a, (ast.Assign, ast.AnnAssign))
              for t in (a.targets if isinstance(a, ast.Assign) else [a.target]) if isinstance(t, ast.Name)]
    special = COMPARISONS | {"__module__", "__qualname__", "__array_priority__", "__class__"}
    return reasons + [f"class {node.name} defines {name}" for name in named if name in special]


def _store_reasons(target, protected, imported):
    """An attribute or item stored into (by ``=``, ``+=``, ``del``, a ``for`` or ``with`` target,
    anywhere): into what is protected or imported, or into another object's attribute."""
    root = _root(target)
    if root in protected or root in imported:
        return [f"assigns into {root}"]
    if isinstance(target, ast.Attribute) and root not in ("self", "cls"):
        return [f"sets an attribute of {root or 'an object'}"]
    return []


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return getattr(node, "id", None)


def _meta(cell):
    """The cell's nbgrader metadata, ``{}`` when the file holds anything but a dict there."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbgrader if isinstance(nbgrader, dict) else {}


def _grade_id(cell):
    grade_id = _meta(cell).get("grade_id")
    return grade_id if isinstance(grade_id, str) else None


def sha256_of(path):
    """The SHA-256 of the file at ``path`` (of no bytes when there is no such regular file), read in chunks."""
    digest = hashlib.sha256()
    if path and os.path.isfile(path) and not os.path.islink(path):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def load(path):
    """``(notebook, problem)``: the parsed notebook, or ``None`` and why it could not be read."""
    try:
        if not path:
            return None, "no file"
        if os.path.islink(path):
            return None, "a symbolic link, not a file: not followed"
        if os.path.getsize(path) > MAX_BYTES:
            return None, f"file too large ({os.path.getsize(path)} bytes; at most {MAX_BYTES})"
        raw = open(path, "rb").read()
    except OSError as error:
        return None, f"unreadable file: {error}"
    if not raw.strip():
        return None, "empty file"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"not UTF-8: {error}"
    try:
        nb = nbformat.reads(text, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, ValueError, KeyError, TypeError) as error:
        return None, f"not a notebook: {str(error)[:200]}"
    if not isinstance(nb.get("cells"), list):
        return None, "not a notebook: no cells"
    return nb, None


def rebuild(submitted, release, protected=()):
    """``(notebook, flags)``: the release with the learner's answers in; ``flags`` lists what changed.

    ``submitted`` may be ``None`` (an unreadable file): the release is graded as it is (no answers).
    ``protected``: the names the instructor's setup cell binds (see :func:`scan`).
    """
    release_ids = [_meta(c).get("grade_id") for c in release.cells if _meta(c).get("grade_id")]
    answers, extras, seen, flags = _learner_code(submitted, release, release_ids)
    if submitted is not None:
        flags += _compare(submitted, release, release_ids, seen, answers)
    for owner, source in [*answers.items(), *((g, s) for g, group in extras.items() for s in group)]:
        reasons = scan(source, protected)
        if reasons:
            where = f"in {owner}" if owner else "before the first answer"
            flags.append(("review", f"suspicious code {where}: {'; '.join(reasons)[:300]}"))
    return _assemble(release, answers, extras), sorted(set(flags), key=flags.index)


def _source(cell):
    """A cell's source as text, whatever the file holds (a list of lines, or something else)."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else ""


def _learner_code(submitted, release, release_ids):
    """``(answers, extras, seen, flags)``: answer sources by ``grade_id``, the learner's own code
    cells by the answer they follow (``None``: before the first), and every ``grade_id`` met."""
    answers, extras, seen, flags, owner = {}, {}, [], [], None
    release_code = {c.source for c in release.cells if c.cell_type == "code" and not _meta(c)}
    for cell in (submitted.cells if submitted is not None else []):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        meta, grade_id, source = _meta(cell), _grade_id(cell), _source(cell)
        seen += [grade_id] if grade_id else []
        if grade_id in release_ids and _release_meta(release, grade_id).get("solution"):
            if grade_id in answers:
                flags.append(("review", f"answer cell {grade_id} appears twice (first one graded)"))
                continue
            answers[grade_id], owner = source, grade_id
        elif not meta and cell.get("cell_type") == "code" and source.strip() and source not in release_code:
            extras.setdefault(owner, []).append(source)
    return answers, extras, seen, flags


def _assemble(release, answers, extras):
    """The release's cells with the answers put in, each followed by the learner's own cells."""
    cells = [nbformat.v4.new_code_cell(source) for source in extras.get(None, [])]
    for cell in release.cells:
        cell = nbformat.from_dict(json.loads(json.dumps(cell)))
        grade_id = _meta(cell).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
            cells += [cell, *(nbformat.v4.new_code_cell(s) for s in extras.get(grade_id, []))]
        else:
            cells.append(cell)
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    nb.cells = cells
    return nb


def _release_meta(release, grade_id):
    return next(_meta(c) for c in release.cells if _meta(c).get("grade_id") == grade_id)


def _compare(submitted, release, release_ids, seen, answers):
    """What the learner changed outside the answer cells (all of it is replaced by the release)."""
    flags = []
    if release_ids and not set(seen) & set(release_ids):
        return [("review", "not this assignment's notebook (none of its cells are there)")]
    missing = [g for g in release_ids if g not in seen]
    if missing:
        flags.append(("review", f"cells deleted (restored from the source): {', '.join(missing)}"))
    foreign = [g for g in seen if g not in release_ids]
    if foreign:
        flags.append(("review", f"cells with unknown grade_ids ignored: {', '.join(foreign[:10])}"))
    kept = [g for g in seen if g in release_ids]
    if kept != [g for g in release_ids if g in kept]:
        flags.append(("review", "cells reordered (graded in the source's order)"))
    by_id = {_grade_id(c): c for c in submitted.cells if _grade_id(c)}
    for grade_id in release_ids:
        ours, theirs = _release_meta(release, grade_id), by_id.get(grade_id)
        if theirs is None:
            continue
        src = next(c for c in release.cells if _meta(c).get("grade_id") == grade_id)
        if {k: v for k, v in _meta(theirs).items() if k != "checksum"} != {k: v for k, v in ours.items() if k != "checksum"}:
            flags.append(("review", f"metadata of {grade_id} changed (restored from the source)"))
        elif ours.get("locked") and theirs.get("source", "") != src.source:
            flags.append(("review", f"locked cell {grade_id} edited (restored from the source)"))
    return flags
