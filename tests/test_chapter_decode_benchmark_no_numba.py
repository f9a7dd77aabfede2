"""book/decode_benchmark.ipynb executes where numba is not installed (issue 34).

A folder put first on PYTHONPATH holds a ``numba`` package whose import raises ImportError, as a
missing package does; the kernel and the quick benchmark it starts both inherit it. The chapter
must run to the end, show the stored run's fused rows, and say how to add the fused path.
"""
import os
from pathlib import Path

import nbformat
import pytest

from nbval_kernels import execute_over_ipc

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "decode_benchmark.ipynb"


@pytest.fixture
def without_numba(tmp_path, monkeypatch):
    blocker = tmp_path / "numba"
    blocker.mkdir()
    (blocker / "__init__.py").write_text('raise ImportError("numba made unimportable for this test")\n')
    path = os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    return tmp_path


def test_chapter_runs_without_numba(without_numba):
    nb = nbformat.read(CHAPTER, as_version=4)
    # the kernel starts with this process's environment, PYTHONPATH with the blocker first
    execute_over_ipc(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "book")}})
    text = "\n".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)
    assert "fused (numba) not run here: numba is not installed (" in text
    assert "pip install -r requirements-bench.txt" in text
    errors = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
              if out.get("output_type") == "error" or out.get("name") == "stderr"]
    assert not errors, errors


def test_the_simulated_environment_is_requirements_txt():
    """What the test above simulates is what ``pip install -r requirements.txt`` makes (Binder's build):
    the checkout installed (``-e .``, so the kernel imports mha_kit from the repository) and no numba."""
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    requirements = [line for line in lines if line]
    assert "-e ." in requirements
    assert not [line for line in requirements if line.lower().startswith("numba")], requirements
