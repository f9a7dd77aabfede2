"""Shared set-up for every test run, unit tests and nbval notebooks alike."""

import os
import shutil
import tempfile
from pathlib import Path

import nbval_kernels
import pytest
from suites import FULL, LONGEST_FIRST, UNIT

TESTS = Path(__file__).resolve().parent
SUITES = {"unit": UNIT, "full": FULL}

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


def pytest_addoption(parser):
    parser.addoption("--suite", choices=sorted(SUITES), default=None,
                     help="collect only tests/suites.py's UNIT (unit) or FULL (full) modules of the tests/ folder "
                          "given on the command line (make check, make test)")


def pytest_ignore_collect(collection_path, config):
    """Under ``--suite``, nothing in tests/ but the suite's own modules is collected (the other suite's are not
    imported, and no notebook or data file there is taken for a test).

    The Makefile names the folder with ``--suite`` rather than each module: pytest 9 collects the folder again for
    every file named on the command line, so the 370 unit modules cost 150,000 collector nodes and about 9 of their
    21 CPU-seconds of collection (2026-12-07, pytest 9.2.0); named as the folder, it is collected once.
    """
    suite = config.getoption("suite")
    if suite and TESTS in collection_path.parents:
        return collection_path.parent != TESTS or collection_path.name not in SUITES[suite] or None
    return None


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
