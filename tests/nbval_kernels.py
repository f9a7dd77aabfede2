"""nbval's kernels, started once more when one dies before it answers.

jupyter_client gives a kernel its five TCP ports by binding port 0, closing the socket and writing
the number into the connection file; the kernel binds them a moment later. Another process can
take one in between, and the kernel then dies with "Address already in use" before it answers
(jupyter_client issue 487, "Spawning many kernels may result in ZMQError":
https://github.com/jupyter/jupyter_client/issues/487). `make test` starts kernels on several workers
at once: in one full run of 2026-12-02, nbval's kernel for a solution notebook died before it
answered and every cell of that notebook failed (nbval sends a kernel's stderr to /dev/null, so
the kernel's own error could not be read; a taken port is the known cause). A kernel that dies at
start three times in a row still fails, with nbval's own error.

nbval's kernels also start without debugpy (:data:`WITHOUT_DEBUGGER`), as safegrade's do
(``mha_course.plugins.sandbox.without_debugger``): no debugger attaches to them, and debugpy's
import was a quarter of a kernel's start (0.41 CPU-seconds with it, 0.31 without, 2026-12-06).

nbval also writes every message a kernel sends into a debug log line, formatted with ``pprint.pformat`` before
the logger knows whether debug lines are wanted (nbval/kernel.py, ``get_message``): it is given :class:`Lazy`
instead, which formats only when a line is written (0.8 of the 9.5 CPU-seconds four long chapters took, measured
on 2 cores, 2026-12-06, fourth session).
"""
import atexit
import functools
import os
import pprint
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ATTEMPTS = 3
DIED = "Kernel died before replying to kernel_info"  # jupyter_client's words


def retried(start, attempts=ATTEMPTS):
    """``start`` (nbval.kernel.start_new_kernel), tried up to ``attempts`` times while the kernel dies at start."""

    @functools.wraps(start)
    def start_kernel(*args, **kwargs):
        for attempt in range(1, attempts + 1):
            try:
                return start(*args, **kwargs)
            except RuntimeError as error:  # nbval has shut the dead kernel down and closed its channels
                if DIED not in str(error) or attempt == attempts:
                    raise

    start_kernel.retried = True
    return start_kernel


#: What ``python -m ipykernel_launcher`` runs, after making ipykernel's import of debugpy fail
#: (``ipykernel.debugger._is_debugpy_available`` is then False: a kernel without a debugger).
WITHOUT_DEBUGGER = ("import runpy, sys; sys.modules['debugpy'] = None; "
                    "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)")


#: ``MHA_NBVAL_FORK=0`` starts every nbval kernel as a fresh interpreter (:data:`WITHOUT_DEBUGGER`)
#: instead of forking it from this process's warm zygote (tests/kernel_fork.py).
FORK = os.environ.get("MHA_NBVAL_FORK", "1") != "0" and hasattr(os, "fork") and sys.platform == "linux"
KERNEL_FORK = Path(__file__).with_name("kernel_fork.py")
_zygote = {}


def zygote_socket():
    """The socket of this process's zygote (tests/kernel_fork.py), started at the first call."""
    if _zygote.get("pid") != os.getpid():  # none yet, or one a parent process started
        folder = tempfile.mkdtemp(prefix="mha_zygote_")
        path = os.path.join(folder, "socket")
        process = subprocess.Popen([sys.executable, str(KERNEL_FORK), "--zygote", path, str(os.getpid())],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the kernel zygote ({KERNEL_FORK}) did not start: exit status {process.wait()}")

        def stop():
            process.kill()
            process.wait()
            shutil.rmtree(folder, ignore_errors=True)

        atexit.register(stop)
        _zygote.update(pid=os.getpid(), path=path)
    return _zygote["path"]


def without_debugger(get_kernel_spec):
    """``get_kernel_spec`` of nbval's kernel spec manager, its current environment's kernel started by
    :data:`WITHOUT_DEBUGGER`, or forked from the warm zygote with the same effect (:data:`FORK`)."""

    @functools.wraps(get_kernel_spec)
    def get(self, kernel_name):
        spec = get_kernel_spec(self, kernel_name)
        if spec.argv[:3] == [sys.executable, "-m", "ipykernel_launcher"]:
            if FORK:
                spec.argv = [sys.executable, "-I", str(KERNEL_FORK), zygote_socket(), *spec.argv[3:]]
            else:
                spec.argv = [sys.executable, "-c", WITHOUT_DEBUGGER, *spec.argv[3:]]
        return spec

    get.without_debugger = True
    return get


class Lazy:
    """``pprint.pformat(value)``, computed when the text is asked for (a log line written), not before."""

    def __init__(self, value):
        self.value = value

    def __str__(self):
        return pprint.pformat(self.value)


def install():
    """Make nbval start its kernels with :func:`retried` and :func:`without_debugger` (nothing to do
    where nbval is not installed)."""
    try:
        import nbval.kernel
    except ImportError:
        return
    if not getattr(nbval.kernel.start_new_kernel, "retried", False):
        nbval.kernel.start_new_kernel = retried(nbval.kernel.start_new_kernel)
    manager = nbval.kernel.NbvalKernelspecManager
    if not getattr(manager.get_kernel_spec, "without_debugger", False):
        manager.get_kernel_spec = without_debugger(manager.get_kernel_spec)
    if getattr(nbval.kernel, "pformat", None) is pprint.pformat:  # the name get_message formats with
        nbval.kernel.pformat = Lazy


def execute_over_ipc(nb, **options):
    """Run ``nb`` with nbclient (``NotebookClient(nb, **options).execute()``) in a kernel that talks over Unix sockets
    in a folder of its own, not over TCP ports, which another process can take before the kernel binds them
    (jupyter_client issue 487, above); safegrade's kernels do the same (mha_course.plugins.execute). Returns ``nb``."""
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    folder = tempfile.mkdtemp(prefix="mha-kernel-")  # short: a Unix socket's path has a length limit

    class OverIpc(AsyncKernelManager):  # nbclient makes, starts, shuts down and cleans up this manager itself
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.transport, self.ip = "ipc", os.path.join(folder, "k")

    try:
        NotebookClient(nb, kernel_manager_class=OverIpc, **options).execute()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return nb
