"""Check one exercise notebook against its visible tests: ``python -m mha_course.check NOTEBOOK``.

Runs the notebook from top to bottom in a fresh kernel, as nbgrader's Validate button does, and
prints one line per failing test cell: what it checks and what is wrong. Exits with 0 when every
visible test passes, 1 when one fails (or a test cell was edited), 2 on a usage error. Unlike
``nbgrader validate``, whose exit code is 0 either way, it can gate a script or a pre-commit hook.

Book: chapter "Exercises".
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .course import prepare_environment
from .report import explain, first_line, last_error_line


def validate(notebook, timeout=60):
    """nbgrader's ``Validator.validate`` result for ``notebook`` (a dict; empty when all pass)."""
    prepare_environment()
    from nbgrader.validator import Validator
    from traitlets.config import Config

    config = Config()
    config.Execute.timeout = timeout
    return Validator(config=config).validate(str(Path(notebook).resolve()))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mha_course.check", description=__doc__.splitlines()[0])
    parser.add_argument("notebook", help="an exercise notebook, e.g. exercises/03_kv_cache/03_kv_cache.ipynb")
    parser.add_argument("--timeout", type=int, default=60, help="seconds a cell may run (default 60)")
    args = parser.parse_args(argv)
    if not Path(args.notebook).is_file():
        parser.error(f"no such notebook: {args.notebook}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own deprecation notices are not the learner's concern
        results = validate(args.notebook, args.timeout)
    for cell in results.get("type_changed", []):
        print(f"CHANGED TYPE: a {cell['old_type']} cell became {cell['new_type']}: {first_line(cell['source'])}")
    for cell in results.get("changed", []):
        print(f"EDITED TEST: {first_line(cell['source'])} (restore the test cell: it is graded as released)")
    for cell in results.get("failed", []):
        print(f"FAIL: {first_line(cell['source'])}\n      {explain(last_error_line(cell['raw_error']))}")
    if results:
        problems = [f"{len(results[key])} {what}" for key, what in (
            ("failed", "failing test cell(s)"), ("changed", "edited test cell(s)"), ("type_changed", "cell(s) of another type"))
            if results.get(key)]
        print(f"{args.notebook}: {', '.join(problems)}")
        return 1
    print(f"{args.notebook}: all visible tests pass (hidden tests may still fail: python -m mha_course.selfgrade)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
