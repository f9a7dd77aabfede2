"""Build the book's website into a folder: ``python -m website.build [--learner] OUT``.

Runs ``jupyter-book build . --builder html -W --keep-going -n`` (as ``make book`` does) with its
output under ``OUT``, then leaves

* ``OUT/html``: the site (open ``OUT/html/index.html``, or serve the folder);
* ``OUT/build.log``: everything the build printed, and ``OUT/build.json``: its exit status.

``--learner`` builds the learner edition (``MHA_HIDE_SOLUTIONS=1``, see website/ext/learner_edition.py):
no worked solution, no hidden test, no instructor's guide; and its "Try it in the browser" edition,
``OUT/html/lite/`` (website/lite/site.py, with ``.venv-lite``; ``MHA_LITE=1`` gives the pages their
buttons, website/lite/buttons.py). ``make learner-book`` and the site
tests (tests/site_browser.py) both build through :func:`build`, so CI tests what is published.
Exits with jupyter-book's status.

``build(..., stored_outputs=[...])`` (the site tests, when nbval checks those notebooks in the
same run) shows those notebooks' stored outputs instead of executing them again
(website/ext/stored_outputs.py).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PLAN_ENV = "MHA_LITE_PLAN"  # website/lite/site.py's PLAN_ENV: where Sphinx writes the browser chapter plan
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
BUILD_TIMEOUT_S = 900


def jupyter_book_command():
    script = Path(sys.executable).with_name("jupyter-book")
    return str(script) if script.exists() else shutil.which("jupyter-book")


def build(out, learner=False, timeout=BUILD_TIMEOUT_S, stored_outputs=()):
    """Build the site into ``out/html``; return ``(returncode, log)``.

    ``stored_outputs``: notebooks (paths relative to the repository) shown with their stored
    outputs, not executed; only for a run that checks those outputs otherwise (nbval).
    """
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.pop("MHA_HIDE_SOLUTIONS", None)
    env.pop("MHA_LITE", None)
    if learner:
        env["MHA_HIDE_SOLUTIONS"] = "1"
        env["MHA_LITE"] = "1"
    # Sphinx writes the browser edition's chapter plan here, and its build reads it (website/lite/site.py, PLAN_ENV)
    plan = out / "lite-plan.json"
    plan.unlink(missing_ok=True)
    env.pop(PLAN_ENV, None)
    if learner:
        env[PLAN_ENV] = str(plan)
    env.pop("MHA_STORED_OUTPUTS", None)
    if stored_outputs:
        env["MHA_STORED_OUTPUTS"] = os.pathsep.join(Path(nb).as_posix() for nb in stored_outputs)
    # Kernels started by the build run this Python's environment.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    command = [jupyter_book_command(), "build", str(REPO_ROOT), "--path-output", str(out),
               "--builder", "html", "-W", "--keep-going", "-n"]
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=timeout, stdin=subprocess.DEVNULL)
    log = ANSI_ESCAPE.sub("", result.stdout + result.stderr)
    html = out / "html"
    if html.exists():
        shutil.rmtree(html)
    if (out / "_build" / "html").exists():
        (out / "_build" / "html").rename(html)
    returncode = result.returncode
    if learner and returncode == 0:
        returncode, lite_log = build_lite(html, plan if plan.is_file() else None)
        log += lite_log
    (out / "build.log").write_text(log, encoding="utf-8")
    (out / "build.json").write_text(json.dumps({"returncode": returncode, "learner": learner}) + "\n")
    return returncode, log


def build_lite(html, plan=None):
    """The browser edition into ``html/lite`` (website/lite/site.py); ``(returncode, log)``.

    ``plan``: the chapter plan the Sphinx build wrote (``MHA_LITE_PLAN``), not worked out a second time."""
    command = [sys.executable, "-m", "website.lite.site", str(html), *(["--plan", str(plan)] if plan else [])]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                            stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout + result.stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output folder (the site lands in OUT/html)")
    parser.add_argument("--learner", action="store_true", help="the learner edition: no answers, no hidden tests")
    args = parser.parse_args(argv)
    returncode, log = build(args.out, learner=args.learner)
    sys.stdout.write(log)
    where = Path(args.out) / "html" / "index.html"
    print(f"website.build: exit {returncode}; the site is {where}" if returncode == 0 else f"website.build: exit {returncode}")
    return returncode


if __name__ == "__main__":
    sys.exit(main())
