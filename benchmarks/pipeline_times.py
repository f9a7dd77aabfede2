"""How long the project's own pipeline takes: fresh install, book build, tests.

Each step runs as a subprocess from the repository root and is timed with a wall clock, so a
change that makes the book slower to build or the tests slower to run shows up as a number.

    python -m benchmarks.pipeline_times                     # book build and tests (minutes)
    python -m benchmarks.pipeline_times --steps unit        # one step: the unit tests only
    python -m benchmarks.pipeline_times --steps install     # fresh venv + pip install (slow, network)

The book is built into a temporary folder (``--path-output``), never into the shared ``_build``;
the fresh install goes into a temporary venv and leaves ``.venv`` alone. Results are printed and
written to ``benchmarks/results/pipeline_times.json``, each step's output to ``pipeline_<step>.log``
beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"


def steps(tmp):
    """Name -> command: the Makefile's ``env``, ``book`` and ``test`` targets, and the unit tests alone."""
    fresh = tmp / "venv"
    pip = [str(fresh / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    install = " && ".join(" ".join(cmd) for cmd in (
        [sys.executable, "-m", "venv", str(fresh)], pip + ["-r", "requirements.txt", "-r", "requirements-bench.txt"], pip + ["-e", "."]))
    return {
        "install": ["bash", "-c", install],
        "book": [str(VENV_BIN / "jupyter-book"), "build", ".", "--builder", "html", "-W", "--keep-going", "-n",
                 "--path-output", str(tmp / "book")],
        "unit": [str(VENV_BIN / "python"), "-m", "pytest", "-q", "-n", "auto", "tests"],
        # `make test`: unit tests, nbval over the chapters and solutions, the site build, the browser test
        "tests": [str(VENV_BIN / "python"), "-m", "pytest", "-q", "-n", "auto", "--dist", "loadfile", "tests",
                  *sorted(str(p.relative_to(ROOT)) for pattern in ("book/*.ipynb", "solutions/*/*.ipynb", "solutions/*.ipynb")
                          for p in ROOT.glob(pattern)),
                  "--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg"],
    }


def time_step(name, command, log):
    """Run one step with its output in ``log``; return its name, wall seconds and exit status."""
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", PYDEVD_DISABLE_FILE_VALIDATION="1")
    start = time.perf_counter()
    with open(log, "w") as out:
        returncode = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - start
    if returncode:
        print(f"{name}: exit {returncode}; see {log}")
    return {"step": name, "seconds": round(seconds, 1), "exit": returncode, "log": str(log)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", nargs="+", default=["book", "tests"], choices=["install", "book", "unit", "tests"])
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "pipeline_times.json")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        commands = steps(Path(tmp))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        results = [time_step(name, commands[name], args.out.with_name(f"pipeline_{name}.log")) for name in args.steps]
    print(f"{'step':<10} {'seconds':>8}  exit   ({os.cpu_count()} cores, {platform.processor() or platform.machine()})")
    for r in results:
        print(f"{r['step']:<10} {r['seconds']:>8.1f}  {r['exit']}")
    args.out.write_text(json.dumps({"cores": os.cpu_count(), "results": results}, indent=2) + "\n")
    return max((r["exit"] for r in results), default=0)


if __name__ == "__main__":
    sys.exit(main())
