"""Shared set-up for every test run, unit tests and nbval notebooks alike."""

import os
import shutil
import tempfile

#: Where every release the grading tests need is generated once per test run (mha_course.pipeline.CACHE_ENV).
TEMPLATES = "MHA_TEMPLATE_CACHE"


def pytest_configure(config):
    # Kernels started by nbval (and the site build) inherit this: ipykernel's
    # debugger otherwise prints a frozen-modules warning to stderr on Python 3.11.
    # MPLBACKEND is deliberately left alone: ipykernel sets the inline backend
    # only when it is unset.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # The first process of the run makes the folder; pytest-xdist's workers and the commands the
    # tests start inherit it, so each assignment's release is generated once per run.
    if TEMPLATES not in os.environ:
        os.environ[TEMPLATES] = config._mha_templates = tempfile.mkdtemp(prefix="mha_templates_")


def pytest_unconfigure(config):
    if getattr(config, "_mha_templates", None):
        shutil.rmtree(config._mha_templates, ignore_errors=True)
        del os.environ[TEMPLATES]
