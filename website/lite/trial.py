"""A trial run of chapters' browser copies with only the packages the browser has.

A chapter that calls a function of mha_kit which imports, when called, a package the browser lacks
(``ml_dtypes``, for bf16 and FP8; website/lite/kernel.py's :func:`kit_needs`) may still run in the
browser: ``quantize_per_head`` reaches ``ml_dtypes`` only for FP8, never for its int8. The static
answer is conservative, so website/lite/site.py's ``chapter_plan`` asks this module instead, for those
chapters only: their code (as the browser copy keeps it, figures dropped) runs in one subprocess in
which importing any package the browser does not have fails, as it would there. numpy is the
desktop's here (the browser's is 1.25; ``make test-numpy-floor`` covers that difference).
"""

import json
import subprocess
import sys
import tempfile

from website.lite import notebooks as lite_notebooks

TRIAL_TIMEOUT_S = 300

# Runs in the subprocess: argv[1] is JSON {"allowed": [top-level modules], "chapters": {docname: [sources]}};
# prints JSON {docname: "the first error" or None}.
_TRIAL = r'''
import importlib.abc, json, sys
import IPython.display  # the kernel's own: imported before the gate (the desktop's IPython has more deps)
plan = json.loads(sys.stdin.read())
allowed = set(plan["allowed"])

class Gate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top not in allowed and top not in sys.stdlib_module_names and top not in sys.builtin_module_names:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the browser)", name=name)
        return None

sys.meta_path.insert(0, Gate())
failures = {}
for docname, sources in plan["chapters"].items():
    namespace = {"__name__": "__main__", "display": IPython.display.display}
    failures[docname] = None
    for number, source in enumerate(sources, 1):
        try:
            exec(compile(source, f"{docname} code cell {number}", "exec"), namespace)
        except BaseException as error:
            failures[docname] = f"code cell {number}: {type(error).__name__}: {error}"
            break
print(json.dumps(failures))
'''


def code_sources(nb):
    """The code a chapter's browser copy runs, cell by cell (its glue cell first, IPython magics left out)."""
    tainted, sources = lite_notebooks._plot_names(nb), [lite_notebooks.GLUE_CELL]
    for cell in lite_notebooks.code_cells(nb):  # remove-cell ones too: the copy keeps them, hidden
        sources.append(lite_notebooks._python(lite_notebooks.split_drawing(cell["source"], tainted)[0]))
    return sources


def failures(chapters, allowed, python=sys.executable):
    """``{docname: first error or None}`` for ``{docname: notebook dict}``, run where only the top-level
    modules ``allowed`` (and the standard library) import."""
    if not chapters:
        return {}
    plan = {"allowed": sorted(allowed), "chapters": {d: code_sources(nb) for d, nb in chapters.items()}}
    with tempfile.TemporaryDirectory() as empty:  # the browser's drive is empty too
        result = subprocess.run([python, "-c", _TRIAL], input=json.dumps(plan), capture_output=True, text=True,
                                cwd=empty, timeout=TRIAL_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"the browser trial of {', '.join(chapters)} failed to run:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])

