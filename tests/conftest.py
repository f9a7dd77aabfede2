"""Shared set-up for every test run, unit tests and nbval notebooks alike."""

import os


def pytest_configure(config):
    # Kernels started by nbval (and the site build) inherit this: ipykernel's
    # debugger otherwise prints a frozen-modules warning to stderr on Python 3.11.
    # MPLBACKEND is deliberately left alone: ipykernel sets the inline backend
    # only when it is unset.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
