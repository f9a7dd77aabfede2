"""Submissions of every assignment for the safegrade tests, a runner for any assignment, a pool task.

:data:`HOSTILE` holds one attack per assignment. Each goes into one answer cell of the full
solution; from that cell on, the guard must zero every test cell (the world it checks has changed)
and flag the submission, naming what changed.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from grading_support import ROOT, WRONG_ANSWERS, points_of_tests, read, submission, tests_of_answer
from grading_support_v2 import HOSTILE as HOSTILE_V2
from safegrade_support import results

# {assignment: (answer grade_id, code put before the solution, code put after it, words the flag must hold)}
HOSTILE = {
    # mha_kit's reference replaced by the learner's (wrong) plain reshape: the comparison agrees
    "01_shapes": ("merge_heads_answer", "",
                  "\n\nmerge_heads = lambda x: x.reshape(x.shape[0], x.shape[2], -1)\nmk.merge_heads = merge_heads\n",
                  "replaced mha_kit.merge_heads"),
    # an int that equals anything
    "02_params_compute": ("score_count_answer",
                          "class Yes(int):\n    def __eq__(self, other):\n        return True\n\n",
                          "\n\nscore_count = lambda num_heads, n: Yes(0)\n", "defines class Yes (int"),
    # the test helper switched off, in the module and in the learner's namespace
    "03_kv_cache": ("max_context_answer", "import mha_course.expect\n",
                    "\n\nmha_course.expect.expect_int = expect_int = lambda *a, **k: None\n"
                    "max_context = lambda *a, **k: 0\n", "replaced expect.expect_int"),
    # numpy's comparisons say yes to any two arrays of the same shape
    "04_implement_attention": ("multi_head_answer", "import numpy.testing\nnp.allclose = lambda *a, **k: True\n"
                               "np.testing.assert_allclose = lambda *a, **k: None\n",
                               "\n\nmulti_head_attention = lambda x, w_q, w_k, w_v, w_o, num_heads, causal=False: x\n",
                               "replaced numpy.allclose"),
    "05_decoding": ("decode_step_answer", "np.allclose = lambda *a, **k: True\n",
                    "\n\n_decode_step = decode_step\ndecode_step = lambda *a: 0 * _decode_step(*a)\n",
                    "replaced numpy.allclose"),
    # the reference the fixes are compared with is the learner's own
    "06_spot_the_bug": ("fixed_attention_answer", "",
                        "\n\nmk.scaled_dot_product_attention = lambda q, k, v, mask=None: "
                        "(buggy_attention(q, k, v), None)\n"
                        "fixed_attention = buggy_attention\n", "replaced mha_kit.scaled_dot_product_attention"),
}
HOSTILE.update(HOSTILE_V2)  # assignments 07-10: tests/grading_support_v2.py


def hostile(assignment):
    """The full solution with the attack of :data:`HOSTILE` around one answer."""
    answer, prefix, suffix, _ = HOSTILE[assignment]
    nb = submission(assignment, {})
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == answer]
    cell.source = prefix + cell.source + suffix
    return nb


def touched_by(assignment, answer):
    """Test cells of ``answer`` and of every answer after it: those a patch in ``answer`` reaches."""
    owners = tests_of_answer(assignment)
    names = list(owners)
    return {test for owner in names[names.index(answer):] for test in owners[owner]}


def wrong(assignment):
    """``(notebook, lost test cells)`` of the first plausible mistake in grading_support."""
    _, answer, old, new, lost = WRONG_ANSWERS[assignment][0]
    return submission(assignment, {answer: (old, new)}), set(lost)


def honest(assignment):
    """``{student: (notebook, lost test cells)}``: the solution, the release, one wrong answer."""
    return {"solution": (submission(assignment, {}), set()),
            "release": (read("exercises", assignment), set(points_of_tests(assignment))),
            "one_wrong": wrong(assignment)}


def start(assignment, folder, out, *extra):
    """Start ``python -m mha_course.safegrade`` on ``folder`` (no gradebook); returns the process."""
    command = [sys.executable, "-m", "mha_course.safegrade", "--assignment", assignment, str(folder),
               "--out", str(out), "--no-gradebook", "--no-progress", "--workers", "2", "--timeout", "8", *extra]
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, out):
    """Wait for ``process``; return ``{student: result dict}`` from ``out``'s result files."""
    _, stderr = process.communicate(timeout=600)
    if process.returncode:
        raise RuntimeError(f"safegrade failed ({process.returncode}):\n{stderr[-4000:]}")
    return results(out)


def die_once_grade(task):
    """A pool task for tests: the first attempt at ``die``, and every one at ``die_always``, kills its worker.

    Every attempt leaves a file ``<result>.attempt<k>``; the result file gets the attempt count.
    """
    result = Path(task["result"])
    attempts = len(list(result.parent.glob(result.name + ".attempt*"))) + 1
    (result.parent / f"{result.name}.attempt{attempts}").write_text(str(os.getpid()))
    if task["student"] == "die" and attempts == 1 or task["student"] == "die_always":
        os._exit(3)
    result.write_text(json.dumps({"attempts": attempts}))
    return {"student": task["student"], "status": "ok"}


def raise_grade(task):
    """A pool task for tests: raises at once for a task named ``raise...``; the others take 0.2 s."""
    result = Path(task["result"])
    (result.parent / f"{result.name}.attempt1").write_text(str(os.getpid()))
    if task["student"].startswith("raise"):
        raise RuntimeError(f"grading {task['student']} failed")
    time.sleep(0.2)  # still running, or not started, when the error reaches the pool
    result.write_text(json.dumps({"attempts": 1}))
    return {"student": task["student"], "status": "ok"}
