"""Submissions of exercise 01 for the safegrade tests: honest ones and one per kind of attack."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from grading_support import ROOT, WRONG_ANSWERS, expected_scores, lost_without, points_of_tests, read, submission

A = "01_shapes"


def _with(answer, prefix="", suffix="", nb=None):
    """``nb`` (default: the full solution) with code put before/after answer cell ``answer``."""
    nb = submission(A, {}) if nb is None else nb
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == answer:
            cell.source = prefix + cell.source + suffix
    return nb


def _tests_edited(nb, source=None, metadata=None, delete=False):
    cells = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            if delete:
                continue
            if source is not None:
                cell.source = source
            if metadata is not None:
                cell.metadata["nbgrader"] = {**meta, **metadata}
        cells.append(cell)
    nb.cells = cells
    return nb


def honest():
    """``{student: notebook}`` of plain submissions."""
    return {"honest_full": submission(A, {}), "honest_blank": read("exercises", A),
            "honest_no_split": submission(A, {"split_heads_answer": None}),
            "honest_float_head": submission(A, {"head_dim_answer": ("d_model // num_heads", "d_model / num_heads")})}


def honest_lost():
    """``{student: test cells that score zero}`` of :func:`honest`, as designed."""
    (float_head,) = [w[4] for w in WRONG_ANSWERS[A] if w[2:4] == ("d_model // num_heads", "d_model / num_heads")]
    return {"honest_full": set(), "honest_blank": set(points_of_tests(A)),
            "honest_no_split": lost_without(A, "split_heads_answer"), "honest_float_head": set(float_head)}


def bom_crlf(nb):
    """``nb``'s file as an editor on Windows may save it: a UTF-8 byte-order mark, CRLF line ends."""
    return b"\xef\xbb\xbf" + nbformat.writes(nb).replace("\n", "\r\n").encode()


def honest_variants():
    """``{student: notebook}``: right answers with helpers, prints, type hints, a figure, extra cells."""
    def answer_replaced(source):
        nb = submission(A, {})
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_answer":
                cell.source = source
        return nb
    extra = submission(A, {})
    extra.cells.insert(3, nbformat.v4.new_code_cell("from mha_kit import plots\nprint('scratch work')"))
    return {"variant_dataclass": answer_replaced(DATACLASS), "variant_namedtuple": answer_replaced(NAMEDTUPLE),
            "variant_figure": _with("head_dim_answer", "", FIGURE), "variant_extra_cells": extra}


# Honest answers written in other ways than the solutions': each must score full with status ok.
DATACLASS = """from dataclasses import dataclass


@dataclass(frozen=True)
class Split:
    d_model: int
    num_heads: int

    @property
    def size(self) -> int:
        return self.d_model // self.num_heads


def head_dim(d_model: int, num_heads: int) -> int:
    print("debug:", d_model, num_heads)
    return Split(d_model, num_heads).size
"""
NAMEDTUPLE = """import math
from collections import namedtuple
from typing import Tuple

Pair = namedtuple("Pair", "d h")


class NotDivisible(Exception):
    pass


def head_dim(d_model: int, num_heads: int) -> int:
    pair = Pair(d_model, num_heads)
    if pair.d % pair.h:
        raise NotDivisible(pair)
    return math.prod([pair.d // pair.h])
"""
FIGURE = """

import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2, 3])
plt.show()
"""

# a right head_dim that prints to stderr while a test calls it
STDERR_PRINT = """

import sys
_right = head_dim


def head_dim(d, h):
    print('my own debug line', file=sys.stderr)
    return _right(d, h)
"""

ALWAYS_EQUAL = "class Yes(int):\n    def __eq__(self, other):\n        return True\n\n"

# A kernel that stops answering: its builtins broken, it can no longer reply to anything
BREAK_BUILTINS = "import builtins\nbuiltins.isinstance = builtins.len = None\n"

# head_dim stays right only if something killed one of the forks: together they want 3.6 GB of
# memory, over the 3 GiB that a kernel's cgroup allows all its processes
MEMORY_FORKS = """

import os
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = np.ones(150_000_000)
        import time
        time.sleep(2)
        os._exit(0)
    children.append(pid)
killed = any(os.WIFSIGNALED(os.waitpid(pid, 0)[1]) for pid in children)
head_dim = lambda d, h: d // h if killed else -1
"""


# head_dim stays right only if the kernel cannot write to its working folder, /dev or (the grader
# being root) its socket folder, and no more than the 256 MiB of its /tmp and 64 MiB of /dev/shm
SOCKETS = 'os.path.dirname(sys.argv[sys.argv.index("-f") + 1])' if os.geteuid() == 0 else "None"
FILL_DISK = f"""

import os, sys
def fill(folder, chunks=100):
    written = 0
    try:
        for i in range(chunks if folder else 0):
            with open(os.path.join(folder, f"fill{{i}}"), "wb") as f:
                f.write(b"x" * 8 * 1024**2)
            written += 8
    except OSError:
        pass
    return written
wrote = [fill(os.getcwd()), fill("/tmp"), fill({SOCKETS}), fill("/dev"), fill("/dev/shm")]
head_dim = lambda d, h: d // h if wrote[0] == wrote[2] == wrote[3] == 0 and wrote[1] <= 256 and wrote[4] <= 64 else -1
"""


def hostile(port=None, outside=None):
    """``{student: notebook or bytes}`` of attacks, one per kind the grader must withstand.

    ``port``: a TCP port listening on the grader's loopback; ``outside``: a file path outside the
    submission's folder. Each adds a submission that tries to reach it.
    """
    blank = lambda: read("exercises", A)  # noqa: E731
    reach = {}
    if port:
        reach["network"] = _with("head_dim_answer", "", "\n\nimport socket\nhead_dim = lambda d, h: d // h + 0 * len("
                                 f"str(socket.create_connection(('127.0.0.1', {port}), timeout=2)))\n")
    if outside:
        reach["write_outside"] = _with("head_dim_answer", "", f"\n\nhead_dim = lambda d, h: d // h + 0 * open("
                                       f"{str(outside)!r}, 'w').write('x')\n")
    return {**reach,
        # right answers, numpy's comparisons patched: the patch buys nothing and costs nothing
        "patch_isclose": _with("head_dim_answer", "import numpy as np\nnp.isclose = lambda *a, **k: True\n"
                                                   "np.array_equal = lambda *a, **k: True\n"),
        # an int that equals anything, as head_dim's answer: worth what the judge says (issue 10)
        "fake_int": _with("head_dim_answer", ALWAYS_EQUAL, "\n\nhead_dim = lambda d, h: Yes(0)\n"),
        "break_builtins": _with("merge_heads_answer", "", "\n\n" + BREAK_BUILTINS),
        "flood": _with("head_dim_answer", "", "\n\nfor _ in range(20):\n    print('x' * 1_000_000)\n"),
        "memory_forks": _with("head_dim_answer", "", MEMORY_FORKS),
        "edit_tests": _tests_edited(blank(), source="pass"),
        "delete_tests": _tests_edited(blank(), delete=True),
        "forge_metadata": _tests_edited(blank(), source="pass", metadata={"grade": False, "locked": False, "points": 0}),
        "fake_output": _with("head_dim_answer", "print('All tests passed: 6 / 6')\n", "\n\nhead_dim = None\n"),
        # a cell that never finishes; the busy loop's case (a kernel that spins, yet answers) is
        # test_grading_timeout's, which spends 5 CPU-seconds where this spends none
        "sleep": _with("head_dim_answer", "import time\ntime.sleep(1000)\n"),
        "exit_kernel": _with("merge_heads_answer", "", "\n\nimport os\nos._exit(1)\n"),
        "segfault": _with("merge_heads_answer", "", "\n\nimport ctypes\nctypes.string_at(0)\n"),
        "memory_bomb": _with("head_dim_answer", "hog = bytearray(64 * 1024**3)\n"),
        # head_dim stays right only if the process limit stops the forks before 1000
        "many_processes": _with("head_dim_answer", "", "\n\nimport os, time\nborn = 0\nfor _ in range(1000):\n"
                                "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
                                "    if pid == 0:\n        time.sleep(3)\n        os._exit(0)\n    born += 1\n"
                                "head_dim = lambda d, h: d // h if born < 1000 else -1\n"),
        "huge_output": _with("head_dim_answer", "print('x' * 5_000_000)\n"),
        # a right answer that writes to stderr while its test runs: a note of the test, no loss (issue 37)
        "stderr_print": _with("head_dim_answer", "", STDERR_PRINT),
        "fill_disk": _with("head_dim_answer", "", FILL_DISK),
        "read_solutions": _with("head_dim_answer", "", f"\n\nhead_dim = lambda d, h: d // h + 0 * len(open("
                                                      f"{str(ROOT / 'solutions' / A / (A + '.ipynb'))!r}).read())\n"),
        # the course's grading files (the judge's questions, the designed answers) beside the notebook
        "list_grading_files": _with("head_dim_answer", "", "\n\nimport os\n\n_grading = [f for f in os.listdir('.') "
                                                          "if f.startswith('grading_')]\n"
                                                          "head_dim = lambda d, h: d // h + len(_grading)\n"),
        "corrupt": b"{not a notebook",
        "empty": b"",
        "not_utf8": b"\xff\xfe\x00\x81 notebook",
        "other_assignment": submission("02_params_compute", {}),
    }


def write(students, folder, assignment=A):
    """Write ``students`` (notebooks or raw bytes) as nbgrader's submitted/ layout under ``folder``."""
    for student, nb in students.items():
        path = Path(folder) / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(nb) if isinstance(nb, bytes) else nbformat.write(nb, path)
    return Path(folder)


def safegrade(folder, out, course, *extra, wait=True, tmpdir=None, env=None, similarity=False):
    """Run ``python -m mha_course.safegrade`` (a subprocess, its own process group; scratch in ``tmpdir``).

    Without ``similarity`` the similarity pass is skipped: these classes are copies of one solution by design.
    """
    Path(course).mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "mha_course.safegrade", "--assignment", A, str(folder), "--out", str(out),
               "--course", str(course), "--workers", "2", "--no-progress", *extra,
               *([] if similarity else ["--no-similarity"])]
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1", **(env or {})}
    if tmpdir:
        Path(tmpdir).mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(tmpdir)
    if not wait:
        return subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-4000:])
    return proc


def results(out):
    """``{student: result dict}`` from the result files."""
    return {p.stem: json.loads(p.read_text()) for p in sorted((Path(out) / "results").glob("*.json"))}


def scores(result):
    return {gid: score for gid, (score, _) in result["scores"].items()}


__all__ = ["A", "honest", "honest_lost", "honest_variants", "hostile", "bom_crlf", "write", "safegrade", "results",
           "scores", "expected_scores"]
