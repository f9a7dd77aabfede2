"""The sandboxed kernel starts without a debugger (mha_course.plugins.sandbox.without_debugger)."""
import subprocess
import sys

import pytest

pytest.importorskip("ipykernel")  # the grading environment's; not in make test-numpy-floor's

ASK = "from ipykernel.debugger import _is_debugpy_available; print(_is_debugpy_available)"


def _debugger_available(before=""):
    """What ipykernel decides in a fresh interpreter, after the statements ``before``."""
    out = subprocess.run([sys.executable, "-c", f"{before}\n{ASK}"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_a_kernel_started_without_debugger_makes_no_debugger():
    before = "from mha_course.plugins.sandbox import without_debugger\nwithout_debugger()"
    assert _debugger_available(before) == "False"


def test_without_it_ipykernel_would_import_debugpy():
    """The control: in this environment ipykernel finds debugpy, so the test above can fail."""
    pytest.importorskip("debugpy")
    assert _debugger_available() == "True"
