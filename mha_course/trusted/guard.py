"""Tamper detection inside the kernel, judged outside it: :class:`GuardedExecute`.

nbgrader's ``Execute`` runs the learner's answers and the hidden tests in one kernel, so an answer
can patch ``np.isclose``, ``builtins.isinstance`` or the ``expect_*`` helpers and pass every test.
``GuardedExecute`` (configured in place of ``Execute`` in ``Autograde.autograde_preprocessors``)

1. inserts a *snapshot* cell before any learner code: it runs the instructor's setup cell (imports)
   and prints the ``id`` of every protected object: all of ``builtins``, ``mha_kit`` and every one
   of its modules (with a digest of the contents of their public tables, such as ``PRESETS``),
   ``mha_course.expect``, ``numpy.testing``, numpy's comparison functions, the setup cell's names in
   the learner's namespace (``np``, ``mk``, ``expect_int``...), the IPython machinery that reports
   errors (``run_cell``, ``showtraceback``, on the class and on the shell itself, and the event
   callbacks that run after a cell) and ``sys.stdout``;
2. wraps every test cell in two *checks*, one before the test's code and one after it, in the same
   cell (no extra round trip to the kernel); each prints the same ids and any class the learner
   defined that subclasses a value type (int, float, tuple, ndarray...) or overrides ``__eq__``;
3. after execution, compares each check with the snapshot **here, in the grader**, removes the
   snapshot cell, and gives every test cell back its own source and outputs. A test cell whose
   checks differ gets an error output (so nbgrader scores it 0) and the submission is flagged for
   manual review with what changed.

Each guard cell prints under a fresh random tag that learner code cannot know in advance. This
catches the patches listed above; a submission written against this grader (one that rewrites the
kernel's output stream to forge the tags) is beyond it, which is why answers that touch
``builtins``, ``sys.modules``, ``gc``, ``ctypes``, ``exec`` and the like are also flagged by a
static scan (:mod:`mha_course.trusted.structure`).
"""
from __future__ import annotations

import json
import os
import secrets
import time

from nbformat.v4 import new_code_cell, new_output
from nbgrader.preprocessors import Execute
from traitlets import Integer, Unicode

from .structure import setup_names

_PROBE = r'''
def _mha_probe(_tag, _names):
    import builtins, sys, types, numbers, json
    import numpy, numpy.testing, math, mha_kit, mha_course.expect
    from IPython.core.interactiveshell import InteractiveShell
    ids = {}
    for label, space in (("builtins", vars(builtins)), ("mha_kit", vars(mha_kit)), ("expect", vars(mha_course.expect)),
                         ("numpy.testing", vars(numpy.testing)), ("math", vars(math))):
        for key, value in list(space.items()):
            if (not key.startswith("__") or key == "__import__") and key not in ("input", "raw_input"):
                ids[label + "." + key] = id(value)
    def inner(into, label, value):  # a function's code, defaults and closure; a class's own methods
        for part in ("__code__", "__defaults__", "__kwdefaults__", "__closure__"):
            if isinstance(value, types.FunctionType):
                into[label + "." + part] = id(getattr(value, part))
        if isinstance(value, type) and value.__module__.startswith(("mha_kit", "mha_course")):
            for key, member in list(vars(value).items()):
                into[label + "." + key] = id(member)
                inner(into, label + "." + key, member)
    for name, module in sorted(sys.modules.items()):  # every submodule, one digest each (a short output)
        if module is not None and (name.startswith("mha_kit") or name == "mha_course.expect"):
            found = {}
            for key, value in list(vars(module).items()):
                if key.startswith("__"):
                    continue
                found[key] = id(value)
                inner(found, key, value)
                if not key.startswith("_") and isinstance(value, (dict, list, set, numpy.ndarray)):
                    data = value.tobytes() if isinstance(value, numpy.ndarray) else repr(value)
                    found[key + "#contents"] = hash(data)
            ids[name + " (its functions' code and its tables)"] = hash(tuple(sorted(found.items())))
    compared = ("isclose", "allclose", "array_equal", "array_equiv", "asarray", "array", "ndarray", "all", "any",
                "abs", "isfinite", "testing")
    for key in compared:
        ids["numpy." + key] = id(getattr(numpy, key, None))
        inner(ids, "numpy." + key, getattr(numpy, key, None))
    ids["numpy (its other public functions)"] = hash(tuple(
        (key, id(value)) for key, value in sorted(vars(numpy).items())
        if not key.startswith("_") and callable(value) and key not in compared))
    from IPython.core.getipython import get_ipython as _shell
    shell = _shell()
    for key in ("run_cell", "run_cell_async", "run_ast_nodes", "run_code", "showtraceback", "_showtraceback"):
        ids["IPython." + key] = id(getattr(InteractiveShell, key, None))
        ids["IPython.shell." + key] = id(vars(shell).get(key))  # patched on the shell object itself
    ids["IPython.events"] = id(shell.events)
    for event, callbacks in sorted(shell.events.callbacks.items()):
        ids["IPython.events." + event] = hash(tuple(id(c) for c in callbacks))
    user = shell.user_ns
    for key in _names:
        ids["user." + key] = id(user.get(key))
    for key in ("numpy", "mha_kit", "mha_course.expect", "builtins"):
        ids["sys.modules." + key] = id(sys.modules.get(key))
    ids["sys.stdout"] = id(sys.stdout)  # (IPython swaps sys.excepthook and input() per cell itself)
    ids["stdout.write"] = id(getattr(type(sys.stdout), "write", None))
    suspects = []
    values = (int, float, complex, bool, str, bytes, tuple, list, dict, set, frozenset, numpy.ndarray, numpy.generic,
              numbers.Number)
    # every live class, walking down from object by identity (a metaclass cannot hide from it)
    seen, classes, stack = set(), [], [object]
    while stack:
        for sub in type.__subclasses__(stack.pop()):
            if id(sub) not in seen:
                seen.add(id(sub))
                classes.append(sub)
                stack.append(sub)
    from ipykernel.compiler import get_tmp_directory
    cells = get_tmp_directory()  # where ipykernel says the code of every cell comes from
    def from_a_cell(cls):  # named "__main__", or with a method written in a cell, whatever it is named
        return cls.__module__ == "__main__" or any(
            isinstance(f, types.FunctionType) and f.__code__.co_filename.startswith(cells) for f in vars(cls).values())
    import mha_course.trusted as state  # the snapshot keeps the classes it saw; checks look at new ones only
    known = getattr(state, "_classes_at_snapshot", None)
    if known is None:
        state._classes_at_snapshot, classes = seen, []
    for cls in (c for c in classes if id(c) not in known):
        bad = [v.__name__ for v in values if issubclass(cls, v)]
        bad += [m for m in ("__eq__", "__ne__", "__bool__", "__index__", "__int__", "__float__", "__instancecheck__",
                            "__array__", "__array_ufunc__", "__array_function__") if m in vars(cls)]
        if bad and from_a_cell(cls):
            suspects.append(cls.__qualname__ + " (" + ", ".join(bad) + ")")
    print(_tag + json.dumps({"ids": ids, "suspects": sorted(suspects)}))
'''


def _cell_code(tag, names, setup=""):
    # The probe is defined and deleted in the same cell, so no earlier learner code can replace it.
    return "\n".join([setup, _PROBE, f"_mha_probe({tag!r}, {names!r})", "del _mha_probe"])


def _is_test(cell):
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade", False)


class GuardedExecute(Execute):
    """nbgrader's ``Execute`` with a snapshot cell and checks inside every test cell (see module docstring)."""

    setup_source = Unicode("", help="the instructor's setup (imports) cell, run before any learner code").tag(config=True)
    verdict_file = Unicode("", help="where to write the guard's verdict as JSON").tag(config=True)
    ipc_prefix = Unicode("", help="Unix-socket prefix of a sandboxed kernel (KernelManager.ip); '' keeps TCP").tag(config=True)
    budget = Integer(0, help="seconds the whole notebook may take; later cells are not run (0: no budget)").tag(config=True)
    max_output_bytes = Integer(8 * 1024**2, help="output kept from the whole notebook; the rest is dropped").tag(config=True)

    def output(self, outs, msg, display_id, cell_index):
        """Keep at most ``max_output_bytes`` of output: a flood would fill the grader's memory first."""
        content = msg.get("content", {})
        self._output_bytes += len(str(content.get("text", ""))) + sum(len(str(v)) for v in content.get("data", {}).values())
        if self._output_bytes > self.max_output_bytes:
            self._output_capped = True
            return None
        return super().output(outs, msg, display_id, cell_index)

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        if self.ipc_prefix:
            km.transport, km.ip = "ipc", self.ipc_prefix
        return km


    def preprocess_cell(self, cell, resources, index):
        """Run one cell; once the kernel has died or the time budget is spent, later code cells get an error."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        if self.budget and not self._dead and time.monotonic() > self._deadline:
            self._budget_spent = True
            self._dead = f"the submission's time budget ({self.budget} s) was spent; later cells were not run"
        if self._dead:
            if cell.cell_type == "code":
                cell.outputs = [new_output("error", ename="KernelDied", evalue=self._dead, traceback=[self._dead])]
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError as error:
            self._dead = f"the kernel died ({error}); later cells were not run"
            cell.outputs = [new_output("error", ename="KernelDied", evalue=self._dead, traceback=[self._dead])]
            return cell, resources
        except CellTimeoutError:  # the kernel was interrupted; the next cells still run
            self._timeouts.append(cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}")
            cell.outputs.append(new_output("error", ename="CellTimeoutError", evalue=f"no reply within {self.timeout} s",
                                           traceback=[f"CellTimeoutError: no reply within {self.timeout} s"]))
            return cell, resources

    def preprocess(self, nb, resources=None, km=None):
        from .sandbox import close_sockets

        # nbclient runs this hook once the kernel is up, before any cell: its socket folder closes
        self.on_notebook_start = lambda **_: close_sockets(self.ipc_prefix)
        self._dead, self._timeouts, self._budget_spent = None, [], False
        self._output_bytes, self._output_capped = 0, False
        self._deadline = time.monotonic() + self.budget
        names = setup_names(self.setup_source) if self.setup_source else []
        tag = secrets.token_hex(8)
        snapshot = new_code_cell(_cell_code(tag, names, self.setup_source))
        snapshot.metadata["mha_guard"] = {"tag": tag}
        for cell in nb.cells:  # the checks run in the test cell itself: no extra round trips
            if _is_test(cell):
                tags = {"before": secrets.token_hex(8), "after": secrets.token_hex(8), "source": cell.source}
                cell.metadata["mha_guard_test"] = tags
                cell.source = "\n".join([_cell_code(tags["before"], names), cell.source, "",
                                         _cell_code(tags["after"], names)])
        nb.cells = [snapshot, *nb.cells]
        nb, resources = super().preprocess(nb, resources, km)
        verdict = self._judge(nb, _reading(nb.cells[0], nb.cells[0].metadata["mha_guard"]["tag"]))
        for index, cell in enumerate(nb.cells):  # nbclient records most timeouts as an error output
            name = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
            if any(o.get("ename") == "CellTimeoutError" for o in cell.get("outputs", [])) and name not in self._timeouts:
                self._timeouts.append(name)
        verdict["kernel_died"] = None if self._budget_spent else self._dead
        verdict["timeouts"], verdict["budget_spent"] = self._timeouts, self._budget_spent and self.budget
        verdict["output_capped"] = self._output_capped and self.max_output_bytes
        nb.cells = [c for c in nb.cells if "mha_guard" not in c.metadata]
        if self.verdict_file:
            with open(self.verdict_file, "w") as f:
                json.dump(verdict, f)
        return nb, resources

    def _judge(self, nb, snapshot):
        """Compare every test cell's checks with the snapshot; zero the tests whose world changed."""
        verdict = {"snapshot_ok": snapshot is not None, "tampered": {}, "suspects": []}
        for cell in nb.cells:
            tags = cell.metadata.pop("mha_guard_test", None)
            if tags is None:
                continue
            readings = [_reading(cell, tags[role]) for role in ("before", "after")]
            _restore(cell, tags)
            if snapshot is None:
                continue  # the setup itself failed (kernel did not start): every test already errored
            base = set(snapshot["suspects"])
            problems = sorted({p for reading in readings for p in _problems(reading, snapshot, base)})
            crashed = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
            if problems and not (crashed and problems == ["guard output missing"]):
                grade_id = cell.metadata["nbgrader"]["grade_id"]
                verdict["tampered"][grade_id] = problems
                cell.outputs.append(new_output("error", ename="Tampering", evalue="; ".join(problems)[:500],
                                               traceback=["Tampering: the grader's world changed around this test"]))
        return verdict


def _stream_text(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _reading(cell, tag):
    """The probe's JSON printed under ``tag`` in ``cell``'s output, or ``None``."""
    for line in _stream_text(cell).splitlines():
        if line.startswith(tag):
            return json.loads(line[len(tag):])
    return None


def _restore(cell, tags):
    """The test cell as the instructor wrote it: its own source, its outputs without the probes' lines."""
    cell.source = tags["source"]
    outputs = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            output["text"] = "".join(line for line in output.get("text", "").splitlines(keepends=True)
                                     if not line.startswith((tags["before"], tags["after"])))
            if not output["text"]:
                continue
        outputs.append(output)
    cell.outputs = outputs


def _problems(reading, snapshot, base):
    if reading is None:
        return ["guard output missing"]
    changed = [key for key, value in snapshot["ids"].items() if reading["ids"].get(key) != value]
    problems = [f"replaced {key}" for key in changed[:20]]
    problems += [f"defines class {s}" for s in reading["suspects"] if s not in base]
    return problems
