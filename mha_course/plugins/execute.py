"""nbgrader's ``Execute`` with the kernel in the sandbox: :class:`SandboxedExecute`.

``nbgrader_config.py`` puts it in ``Autograde.autograde_preprocessors`` in place of nbgrader's
``Execute``, so ``nbgrader autograde``, formgrader's Autograde button and
``python -m mha_course.safegrade`` all run every submission the same way:

* the kernel is started by :mod:`.sandbox` (limits, namespaces, a supervisor), with the graded kit
  of the assignment (:mod:`.graded_kit`: ``mha_kit`` and the kernel side of ``mha_course``) first
  on its path (never the real source, never ``solutions/``); no kernelspec needs to be installed
  (:class:`SandboxKernelManager`);
* a cell past the course's time limit (``Execute.timeout``) gets an error that names the limit; a
  kernel that stops answering (its builtins broken) is ended within
  :attr:`SandboxedExecute.answer_seconds`, and the cells after it get an error;
* a dead kernel costs the cells after it, not the notebook; the whole notebook has a time budget;
  output beyond :attr:`SandboxedExecute.max_output_bytes` is dropped as it arrives; error carried
  forward's re-run spends what is left of both, and its flags are the submission's;
* what happened is recorded as flags in the notebook's metadata (:func:`mha_course.notebook.add_flags`),
  which :class:`~mha_course.plugins.flags.RecordFlags` writes into the gradebook.
"""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import time
from pathlib import Path
from queue import Empty

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async, run_sync
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Dict, Integer, List, Unicode

from ..notebook import add_flags
from . import graded_kit, sandbox


#: The key of the record that a submission's runs share in nbgrader's ``resources`` (see :meth:`SandboxedExecute.preprocess`).
RUN_KEY = "mha_course_run"


@functools.lru_cache(maxsize=None)
def kit_path(assignment):
    """The folder to put first on a grading kernel's path for ``assignment``: its graded kit, built once per process."""
    folder = Path(tempfile.mkdtemp(prefix="mha_kit_"))
    folder.chmod(0o755)  # a root grader's kernel runs as a user id of its own: it must read it
    atexit.register(shutil.rmtree, folder, True)
    return str(graded_kit.build(assignment, folder / assignment))


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel is started through :mod:`.sandbox` (no kernelspec on disk)."""

    mode = Unicode("limits-only", help="bwrap or limits-only")
    pythonpath = List(Unicode(), help="folders first on the kernel's path, mounted read-only")
    limits = Dict(help="resource limits, as sandbox.LIMITS")

    @property
    def kernel_spec(self):
        if self._kernel_spec is None:
            argv = sandbox.kernel_argv(self.mode, self.limits or sandbox.LIMITS, self.pythonpath)
            # interrupt by message: a signal would reach the launcher, not the kernel inside bwrap
            self._kernel_spec = KernelSpec(argv=argv, display_name="Python 3 (sandboxed)", language="python",
                                           interrupt_mode="message")
        return self._kernel_spec


class SandboxedExecute(Execute):
    """``Execute`` in the sandbox, with a time budget, an output cap and an end to silent kernels."""

    budget = Integer(0, help="seconds the whole notebook may run; 0: ten times Execute.timeout").tag(config=True)
    max_output_bytes = Integer(8 * 1024**2, help="output kept from the whole notebook").tag(config=True)
    answer_seconds = Integer(10, help="seconds a kernel has to answer a control request").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.mode, km.pythonpath = self._mode, [kit_path(self._assignment)]
        # Unix sockets in a short folder of their own: the only way to the kernel in a sandbox without a network and,
        # without a sandbox, no TCP port for another process to take between jupyter_client's choosing it and the
        # kernel's binding it (jupyter_client issue 487; a limits-only kernel on TCP died at start, "Kernel died before
        # replying to kernel_info", in one full test run on 2 cores, 2026-12-06). TCP stays only where there are no
        # Unix sockets.
        if self._mode == "bwrap" or os.name == "posix":
            km.transport, km.ip = "ipc", str(Path(self._sockets) / "k")
        return km

    def preprocess(self, nb, resources=None, km=None):
        resources = {} if resources is None else resources
        # One budget, one output cap and one list of flags per submission: error carried forward runs the notebook
        # again with this step's class and a copy of these resources (the dict below is shared), so the re-run
        # spends what is left of the submission's time and output, and its flags reach the notebook (RecordFlags).
        self._rerun = isinstance(resources.get(RUN_KEY), dict)
        self._shared = resources[RUN_KEY] if self._rerun else {"deadline": None, "flags": [], "output_bytes": 0}
        resources[RUN_KEY] = self._shared
        self._mode = sandbox.isolation_mode()
        if self._mode != "bwrap":
            self.log.warning("no sandbox (bubblewrap) here: the kernel runs with resource limits only")
        self._assignment = (resources or {}).get("nbgrader", {}).get("assignment", "")
        self._sockets = tempfile.mkdtemp(prefix="mha", dir="/tmp" if Path("/tmp").is_dir() else None)
        self._dead, self._timeouts, self._budget_spent, self._capped = None, [], False, False
        self._output_bytes = self._shared.get("output_bytes", 0)
        self._probe = None  # (msg_id, time sent) of the control-channel request not answered yet
        budget = self.budget or 10 * (self.timeout or 30)
        self._deadline = time.monotonic() + budget + 120  # until the kernel is up (a busy machine)
        if self._rerun and self._shared["deadline"] is not None:
            self._deadline = self._shared["deadline"]
        limit = f"the course's time limit of {self.timeout} s per cell"
        self.error_on_timeout = {"ename": "CellTimeoutError", "evalue": f"stopped: this cell ran past {limit}",
                                 "traceback": [f"CellTimeoutError: stopped: this cell ran past {limit}"]}
        self.on_notebook_start = lambda **_: self._started(budget)
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            shutil.rmtree(self._sockets, ignore_errors=True)
            sandbox.remove_empty_cgroups()
            self._shared["output_bytes"] = self._output_bytes
        flags = self._flags(budget)
        if self._rerun:  # the copy is thrown away: its flags go with the submission's (RecordFlags adds them)
            flags = [[severity, f"in the error-carried-forward re-run: {text}"] for severity, text in flags]
            self._shared["flags"].extend(flags)
        add_flags(nb, flags)
        return nb, resources

    def _started(self, budget):
        """Once the kernel is up, before any cell: its socket folder closes, its time budget starts
        (a re-run's: what is left of the submission's)."""
        sandbox.close_sockets(str(Path(self._sockets) / "k"))
        self._deadline = time.monotonic() + budget
        if self._rerun and self._shared["deadline"] is not None:
            self._deadline = min(self._deadline, self._shared["deadline"])
        elif not self._rerun:
            self._shared["deadline"] = self._deadline

    def _flags(self, budget):
        flags = []
        if self._timeouts:
            flags.append(["info", f"timed out in {', '.join(self._timeouts)} (limit {self.timeout} s per cell; "
                                  "a test cell that timed out scored 0)"])
        if self._capped:
            flags.append(["review", f"printed more than {self.max_output_bytes // 2**20} MiB: the rest of the "
                                    "output was dropped"])
        if self._budget_spent:
            flags.append(["review", f"time budget of {budget} s spent: the cells after it were not run (scored 0)"])
        elif self._dead:
            flags.append(["info", f"crash: {self._dead[:200]} (cells after it scored 0)"])
        return flags

    def output(self, outs, msg, display_id, cell_index):
        """Keep at most ``max_output_bytes`` of output: a flood would fill the grader's memory first."""
        content = msg.get("content", {})
        self._output_bytes += len(str(content.get("text", ""))) + sum(len(str(v)) for v in content.get("data", {}).values())
        if self._output_bytes > self.max_output_bytes:
            self._capped = True
            return None
        return super().output(outs, msg, display_id, cell_index)

    def preprocess_cell(self, cell, resources, index):
        """Run one cell; once the kernel is dead, silent or out of time, later code cells get an error."""
        if not self._dead and time.monotonic() > self._deadline:
            self._budget_spent = True
            self._dead = "the submission's time budget was spent; later cells were not run"
        if self._dead:
            if cell.cell_type == "code":
                cell.outputs = [new_output("error", ename="KernelDied", evalue=self._dead, traceback=[self._dead])]
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError as error:
            self._dead = self._dead or f"the kernel died ({error}); later cells were not run"
            cell.outputs = [new_output("error", ename="KernelDied", evalue=self._dead, traceback=[self._dead])]
            return cell, resources
        except CellTimeoutError:  # its reply came, its output did not: the kernel has stopped answering
            self._dead = "the kernel stopped answering (its output never came); it was ended"
            run_sync(self.km.shutdown_kernel)(now=True)
            cell.outputs = [new_output("error", ename="KernelDied", evalue=self._dead, traceback=[self._dead])]
            return cell, resources
        if any(o.get("ename") == "CellTimeoutError" for o in cell.get("outputs", [])):
            self._timeouts.append(cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}")
        return cell, resources

    async def _async_check_alive(self):
        """nbclient's check (every second while a cell runs), plus: does the kernel still answer?

        A ``kernel_info`` request goes to the kernel's control channel, which ipykernel serves on a
        thread of its own, busy cell or not; a kernel that leaves one unanswered for
        ``answer_seconds`` (its builtins broken, say) is ended at once instead of at the time limit.
        """
        await super()._async_check_alive()
        if self.kc is None or not hasattr(self.kc, "control_channel"):
            return
        while self._probe:
            try:
                reply = await self.kc.control_channel.get_msg(timeout=0)
            except Empty:
                break
            if reply.get("parent_header", {}).get("msg_id") == self._probe[0]:
                self._probe = None
        now = time.monotonic()
        if self._probe and now - self._probe[1] > self.answer_seconds:
            self._dead = f"the kernel stopped answering (no reply within {self.answer_seconds} s); it was ended"
            await ensure_async(self.km.shutdown_kernel(now=True))
            raise DeadKernelError(self._dead)
        if self._probe is None:
            request = self.kc.session.msg("kernel_info_request")
            self.kc.control_channel.send(request)
            self._probe = (request["header"]["msg_id"], now)
