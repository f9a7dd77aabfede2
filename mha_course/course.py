"""Run nbgrader on a course directory through its Python API, in one process.

The command line starts a new Python (and upgrades the gradebook) for every step; the API does the
steps one after another in the same process, which keeps the self-grader and the tests fast.

>>> api = course_api("/path/to/course")                      # doctest: +SKIP
>>> api.generate_assignment("01_shapes")["success"]          # doctest: +SKIP
True
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

#: The assignments, in the order the book teaches them (folder names under solutions/).
ASSIGNMENTS = (
    "01_shapes",
    "02_params_compute",
    "03_kv_cache",
    "04_implement_attention",
    "05_decoding",
    "06_spot_the_bug",
)


def _find_course_root():
    """The repository root: the folder holding ``nbgrader_config.py`` and ``solutions/``.

    The package's parent folder when installed in editable mode (the normal case); otherwise the
    current folder or the nearest folder above it that holds the course.
    """
    here = Path.cwd().resolve()
    for folder in (Path(__file__).resolve().parent.parent, here, *here.parents):
        if (folder / "nbgrader_config.py").is_file() and (folder / "solutions").is_dir():
            return folder
    return Path(__file__).resolve().parent.parent


#: The repository root: the nbgrader course that this package belongs to.
REPO_ROOT = _find_course_root()


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
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


def alembic_head():
    """The gradebook schema's alembic revision, read in this process.

    nbgrader stamps every new ``gradebook.db`` with the output of the ``alembic heads`` command, a
    new Python that takes seconds to start; alembic's own API reads the same revision directly.
    """
    from alembic.script import ScriptDirectory
    import nbgrader

    return ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()


def course_config(root, **overrides):
    """The repository's ``nbgrader_config.py`` with ``CourseDirectory.root = root``.

    ``overrides`` are ``{"Section.name": value}`` pairs, e.g. ``{"Exchange.root": "/tmp/x"}``.
    """
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    config.CourseDirectory.root = str(Path(root).resolve())
    for key, value in overrides.items():
        section, name = key.rsplit(".", 1)
        config[section][name] = value
    return config


def course_api(root, **overrides):
    """An ``nbgrader.apps.NbGraderAPI`` for the course at ``root`` (see :func:`course_config`)."""
    prepare_environment()
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = course_config(root, **overrides)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def run_step(result, what):
    """Raise ``RuntimeError`` with nbgrader's log when an API step did not succeed."""
    if not result.get("success"):
        raise RuntimeError(f"nbgrader {what} failed:\n{result.get('log', '')}\n{result.get('error', '')}")
    return result
