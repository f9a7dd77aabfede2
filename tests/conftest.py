"""Shared set-up for every test run, unit tests and nbval notebooks alike."""

import os
import shutil
import tempfile

import nbval_kernels
import pytest
from suites import LONGEST_FIRST, UNIT

#: Where every release the grading tests need is generated once per test run (mha_course.grade.pipeline.CACHE_ENV).
TEMPLATES = "MHA_TEMPLATE_CACHE"


class WholeNotebooks:
    """Under `pytest --lf`, a notebook with a failed cell runs whole: nbval runs a notebook's cells
    in one kernel, so a cell run without the cells before it fails for want of their names.

    Registered in pytest_configure, after the cache plugin's --lf (LFPlugin), so that this wrapper
    runs around it and sees the items it kept.
    """

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, config, items):
        collected = list(items)
        result = yield
        if config.getoption("lf", default=False):
            kept = set(items)
            notebooks = {item.path for item in items if item.path.suffix == ".ipynb"}
            items[:] = [item for item in collected if item in kept or item.path in notebooks]
        return result


def pytest_configure(config):
    # Kernels started by nbval (and the site build) inherit this: ipykernel's
    # debugger otherwise prints a frozen-modules warning to stderr on Python 3.11.
    # MPLBACKEND is deliberately left alone: ipykernel sets the inline backend
    # only when it is unset.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # A kernel that dies before it answers (a TCP port taken by another process meanwhile) is started again.
    nbval_kernels.install()
    # The first process of the run makes the folder; pytest-xdist's workers and the commands the
    # tests start inherit it, so each assignment's release is generated once per run.
    if TEMPLATES not in os.environ:
        os.environ[TEMPLATES] = config._mha_templates = tempfile.mkdtemp(prefix="mha_templates_")
    config.pluginmanager.register(WholeNotebooks(), "mha-whole-notebooks")


def pytest_unconfigure(config):
    if getattr(config, "_mha_templates", None):
        shutil.rmtree(config._mha_templates, ignore_errors=True)
        del os.environ[TEMPLATES]


def pytest_collection_modifyitems(config, items):
    """Mark the tests of tests/suites.py's UNIT modules `unit`: `pytest -m unit` runs make check's tests;
    put its LONGEST_FIRST files first, longest first (each file's own order kept)."""
    for item in items:
        if item.path.name in UNIT:
            item.add_marker(pytest.mark.unit)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # node ids are rootdir-relative
