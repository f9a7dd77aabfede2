"""Sphinx extension: a build that shows some notebooks' stored outputs instead of running them.

The book executes every chapter (``execute_notebooks: force``). The one exception is a build
for a test run that also re-executes those chapters with nbval and compares every output with
the stored one (``make test``): running them a second time in the site build proves nothing
more and costs minutes. website/build.py then sets ``MHA_STORED_OUTPUTS`` to those notebooks
(paths relative to the repository, ``os.pathsep`` between them), and this extension adds them
to myst-nb's ``nb_execution_excludepatterns``.

A notebook that reads the learner edition's switch (:data:`learner_edition.ENV_FLAG`) runs
differently in this build than in nbval, so it always executes (:func:`runs_per_edition`).
Without the variable (``make book``, ``make learner-book``, CI's published build) nothing changes.
"""

import json
import os
from pathlib import Path

from website.ext.learner_edition import ENV_FLAG

ENV_STORED = "MHA_STORED_OUTPUTS"


def runs_per_edition(notebook):
    """Whether a code cell of ``notebook`` (a path) reads the learner edition's switch."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    return any(ENV_FLAG in "".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")


def stored_notebooks(environ=os.environ):
    """The notebooks ``MHA_STORED_OUTPUTS`` names, as POSIX paths relative to the repository."""
    return [Path(part).as_posix() for part in environ.get(ENV_STORED, "").split(os.pathsep) if part]


def skip_execution(app, config):
    """Exclude the named notebooks from execution; refuse one that must run in this edition."""
    notebooks = stored_notebooks()
    edition_bound = [nb for nb in notebooks if runs_per_edition(Path(app.srcdir) / nb)]
    if edition_bound:
        raise ValueError(f"{ENV_STORED}: {', '.join(edition_bound)} read(s) {ENV_FLAG}, so the stored "
                         "outputs are not what this build would show; leave them out")
    config.nb_execution_excludepatterns = [*config.nb_execution_excludepatterns, *notebooks]


def setup(app):
    app.connect("config-inited", skip_execution)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
