"""nbgrader's API, and notebook files: nbgrader run on a course folder in this process; a file read as nbgrader reads it.

The command line starts a new Python (and upgrades the gradebook) for every step; the API does the
steps one after another in the same process, which keeps the self-grader and the tests fast.
Notebook files are read here with ``nbformat``, outside any kernel and with limits (:func:`load`);
below this layer the course works on notebooks as plain dicts (:mod:`mha_course.notebook`).

>>> api = course_api("/path/to/course")                      # doctest: +SKIP
>>> api.generate_assignment("01_shapes")["success"]          # doctest: +SKIP
True
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import nbgrader
import nbgrader.api
from alembic.script import ScriptDirectory
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader

from ..course import ASSIGNMENTS, REPO_ROOT
from ..notebook import MAX_BYTES, grade_id, one_line


def prepare_environment():
    """Set up ``os.environ`` for nbgrader run from this Python.

    nbgrader runs ``alembic`` as a command, so the scripts folder of the running Python (the
    project's virtual environment) goes onto ``PATH``; in this process nbgrader reads the schema
    revision through :func:`alembic_head` instead.
    """
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
    # Python 3.11 kernels otherwise warn about frozen modules on stderr when the debugger loads.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nbgrader.api.get_alembic_version = alembic_head


def alembic_head():
    """The gradebook schema's alembic revision, read in this process.

    nbgrader stamps every new ``gradebook.db`` with the output of the ``alembic heads`` command, a
    new Python that takes seconds to start; alembic's own API reads the same revision directly.
    """
    return ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()


def course_config(root, **overrides):
    """The repository's ``nbgrader_config.py`` with ``CourseDirectory.root = root``.

    ``overrides`` are ``{"Section.name": value}`` pairs, e.g. ``{"Exchange.root": "/tmp/x"}``.
    """
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    config.CourseDirectory.root = str(Path(root).resolve())
    for key, value in overrides.items():
        section, name = key.rsplit(".", 1)
        config[section][name] = value
    return config


def course_api(root, **overrides):
    """An ``nbgrader.apps.NbGraderAPI`` for the course at ``root`` (see :func:`course_config`)."""
    prepare_environment()
    config = course_config(root, **overrides)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def converter_of(configurable):
    """The nbgrader converter (``Autograde``, ``GenerateAssignment``...) running ``configurable``, a
    preprocessor: its nearest parent that has a ``coursedir``; ``None`` when it runs on its own."""
    parent = configurable
    while parent is not None:
        if isinstance(getattr(parent, "coursedir", None), CourseDirectory):
            return parent
        parent = getattr(parent, "parent", None)
    return None


def coursedir_of(configurable):
    """The ``CourseDirectory`` of the nbgrader converter running ``configurable`` (else one read from its config)."""
    converter = converter_of(configurable)
    return converter.coursedir if converter is not None else CourseDirectory(config=configurable.config)


def run_step(result, what):
    """Raise ``RuntimeError`` with nbgrader's log when an API step did not succeed."""
    if not result.get("success"):
        raise RuntimeError(f"nbgrader {what} failed:\n{result.get('log', '')}\n{result.get('error', '')}")
    return result


def load(path):
    """``(notebook, problem)``: the notebook in the file at ``path``, or ``None`` and why it cannot be read.

    Read outside any kernel, with limits: a notebook an editor saved with a UTF-8 byte-order mark
    or Windows line ends reads as any other.
    """
    try:
        if not path:
            return None, "no file"
        if Path(path).is_symlink():
            return None, "a symbolic link, not a file: not followed"
        size = Path(path).stat().st_size
        if size > MAX_BYTES:
            return None, f"file too large ({size} bytes; at most {MAX_BYTES})"
        raw = Path(path).read_bytes()
    except OSError as error:
        return None, f"unreadable file: {error}"
    return reads(raw)


def reads(raw):
    """``(notebook, problem)`` of a file's bytes (see :func:`load`)."""
    if not raw.strip():
        return None, "empty file"
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark, if any, is not part of the JSON
    except UnicodeDecodeError as error:
        return None, f"not UTF-8: {error}"
    try:
        nb = nbformat.reads(text, as_version=4)
    except RecursionError:
        return None, "not a notebook: nested too deep"
    except (nbformat.reader.NotJSONError, ValueError, KeyError, TypeError) as error:
        return None, f"not a notebook: {one_line(error, 200)}"
    if not isinstance(nb.get("cells"), list):
        return None, "not a notebook: no cells"
    return nb, None


def solution_notebook(assignment, root=REPO_ROOT):
    """The source notebook of ``assignment`` (answers and hidden tests): ``solutions/<a>/<a>.ipynb`` under ``root``."""
    return nbformat.read(Path(root) / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)


def assignment_of(path):
    """The assignment the notebook at ``path`` answers: its file name, or else the grade ids of its cells.

    So JupyterLab's copies (``01_shapes-Copy1.ipynb``, ``01_shapes (1).ipynb``) count as
    ``01_shapes``. ``None`` when no assignment's cells are in it. Raises ``ValueError`` with one line
    when the file is not a notebook.
    """
    nb, problem = load(path)
    if problem:
        raise ValueError(f"{path} is not a readable notebook ({problem})")
    if Path(path).stem in ASSIGNMENTS:
        return Path(path).stem
    ids = {grade_id(c) for c in nb.cells} - {None}
    overlap = {a: len(ids & {grade_id(c) for c in solution_notebook(a).cells}) for a in ASSIGNMENTS}
    best = max(overlap, key=overlap.get)
    return best if overlap[best] else None
