"""Open the exercises in JupyterLab for a learner: ``make lab`` (``python -m mha_course.lab``).

The learner works in a copy, ``work/`` (ignored by git): every exercise file missing there is copied
from ``exercises/``, and nothing already there is overwritten, so the learner's answers survive a
``git pull`` and a new assignment appears on the next start. Validate then rewrites the copy,
never the tracked release.

The server runs with this course's learner settings, ``mha_course/learner_lab/`` (put on
``JUPYTER_CONFIG_PATH``, above the virtual environment's and below the user's own): nbgrader's
instructor extensions are off (formgrader, Create Assignment, the assignment and course lists,
which need an exchange folder a learner has not got), and its Validate button stays.

Book: chapter "Exercises".
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from .course import REPO_ROOT

#: The learner's settings for the JupyterLab server (server extensions and disabled lab plugins).
LEARNER_CONFIG = Path(__file__).resolve().parent / "learner_lab"


def working_copy(work, release=REPO_ROOT / "exercises"):
    """Copy every file of ``release`` that ``work`` lacks; return the paths copied (nothing is overwritten)."""
    copied = []
    for source in sorted(Path(release).rglob("*")):
        target = Path(work) / source.relative_to(release)
        if source.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            copied.append(target)
    return copied


def lab_environment(environ=os.environ):
    """``environ`` with the learner settings first on ``JUPYTER_CONFIG_PATH`` and this Python first on ``PATH``."""
    paths = [str(LEARNER_CONFIG), *filter(None, environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep))]
    scripts = str(Path(sys.executable).parent)  # kernels and nbgrader run this environment's Python
    return {**environ, "JUPYTER_CONFIG_PATH": os.pathsep.join(paths), "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "PATH": os.pathsep.join([scripts, environ.get("PATH", "")])}


def lab_command(work, port, extra=()):
    """The command line of the learner's JupyterLab server on ``work``."""
    jupyter = Path(sys.executable).parent / "jupyter"
    return [str(jupyter), "lab", f"--ServerApp.root_dir={Path(work).resolve()}", f"--ServerApp.port={port}",
            "--ServerApp.ip=127.0.0.1", *(["--ServerApp.allow_root=True"] if os.geteuid() == 0 else []), *extra]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mha_course.lab", description=__doc__.splitlines()[0])
    parser.add_argument("--work", default=str(REPO_ROOT / "work"), help="the working copy (default: work/)")
    parser.add_argument("--port", type=int, default=8888, help="the server's port (default 8888)")
    args, extra = parser.parse_known_args(argv)
    copied = working_copy(args.work)
    print(f"{len(copied)} new file(s) copied from exercises/ into {args.work}; your answers there are kept", flush=True)
    command = lab_command(args.work, args.port, extra)
    os.execve(command[0], command, lab_environment())


if __name__ == "__main__":
    sys.exit(main())
