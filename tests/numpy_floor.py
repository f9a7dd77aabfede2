"""Print the test files of mha_kit that ``make test-numpy-floor`` runs on the oldest numpy it supports.

mha_kit imports only numpy and must work on numpy >= 1.25 (pyproject.toml), the numpy of the browser
edition's kernel (website/lite/site.py). Its tests are the files ``tests/test_*.py`` that import
nothing but the standard library, ``mha_kit``, numpy, pytest, hypothesis, ``tests/chapter_outputs.py`` and
``tests/speculative_reference.py`` (both standard library only) (a test of the plots, the grading or the site needs more, and is left to
``make test``): a new module's test joins by itself. Paths relative to the repository, one line.
"""

import ast
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {"mha_kit", "numpy", "pytest", "hypothesis", "chapter_outputs", "speculative_reference"}


def imported(path):
    """Top-level names of the modules a file imports (absolute imports only)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def kit_tests(root=REPO_ROOT):
    return [path.relative_to(root).as_posix() for path in sorted((root / "tests").glob("test_*.py"))
            if imported(path) <= ALLOWED | set(sys.stdlib_module_names)]


if __name__ == "__main__":
    print(" ".join(kit_tests()))
