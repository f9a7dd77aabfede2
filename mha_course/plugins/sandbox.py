"""Start a submission's kernel in a sandbox: ``python -m mha_course.plugins.sandbox -f CONNECTION_FILE``.

The grader (nbgrader, trusted) runs outside; only the kernel that executes the learner's code runs
here. :func:`kernel_argv` is the command nbgrader's ``Execute`` starts every kernel with (through
:class:`mha_course.plugins.execute.SandboxKernelManager`). The module then

* lowers the resource limits (:data:`LIMITS`: address space, CPU seconds, file size) and, where the
  machine lets it, puts the kernel in pids and memory cgroups of its own;
* scrubs the environment (only ``PATH``, ``HOME``, ``LANG`` and the variables Python needs);
* on Linux with bubblewrap, ``exec``s ``bwrap``: new PID, network, IPC and UTS namespaces (no
  network at all), a read-only view of the system folders and the Python environment, the
  notebook's scratch folder (the kernel's working folder, read-only), the graded kit (``mha_kit``
  and the kernel side of ``mha_course``: ``--pythonpath``, first on its path) and a ``/tmp`` of its own of
  limited size, its only place to write; the real ``mha_kit`` source, ``solutions/``, the
  gradebook and other submissions are simply not there.
  The kernel talks to the grader over Unix sockets (``KernelManager.transport = "ipc"``) in a
  short folder of their own, since a kernel without a network cannot reach a TCP port; once the
  kernel is up, the grader closes that folder to it (as root: see :func:`close_sockets`).
* inside the sandbox (``--inside``), before the kernel starts: caps the number of processes
  (``RLIMIT_NPROC``) and, when the grader runs as root, gives up root for a user id of the kernel's
  own (see :func:`_namespaces`); the kernel starts without a debugger (:func:`without_debugger`);
* stays as the sandbox's supervisor: when the grading process is gone (a killed batch), it kills
  the sandbox and with it the kernel;
* without bubblewrap, runs the kernel as an ordinary process with the limits only; the grader
  prints a banner and writes ``"isolation": "limits-only"`` into every report. Its kernel talks over
  Unix sockets too (on POSIX): a TCP port jupyter_client picks can be taken by another process before
  the kernel binds it (jupyter_client issue 487).
"""
from __future__ import annotations

import functools
import json
import os
import resource
import runpy
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

#: Resource limits of a kernel: ``{name: value}``; sizes in bytes, CPU in seconds.
LIMITS = {
    "RLIMIT_AS": 3 * 1024**3,      # a memory bomb gets MemoryError instead of the machine's RAM
    "RLIMIT_CPU": 120,             # CPU seconds of the whole kernel (Execute.timeout stops a cell first)
    "RLIMIT_NPROC": 256,           # processes and threads of the kernel (set inside the sandbox)
    "RLIMIT_FSIZE": 64 * 1024**2,  # no file larger than 64 MiB
}
#: Size of the kernel's ``/tmp``, its only place to write files (its working folder is read-only).
TMP_BYTES = 256 * 1024**2
#: Size of its ``/dev/shm`` (shared memory); the rest of its ``/dev`` is read-only.
SHM_BYTES = 64 * 1024**2

#: First on a kernel's ``sys.path``: a ``debugpy`` that fails to import, so ipykernel starts without
#: its debugger (a quarter of its start-up time; no grading kernel needs one).
KERNEL_PATH = Path(__file__).resolve().parent / "kernel_path"
#: A kernel run by a root grader gets user id ``KERNEL_UID_BASE + pid of its launcher``: unused by
#: any account, and different for every kernel alive, so each one's process count is its own.
KERNEL_UID_BASE = 1_000_000
_BWRAP = shutil.which("bwrap")


def _as_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def bwrap_works():
    """True when ``bwrap`` exists and can create the sandbox's namespaces on this machine."""
    if _BWRAP is None or not sys.platform.startswith("linux"):
        return False
    probe = [*_namespaces(), "--ro-bind", "/", "/", "--", "/bin/true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=None)
def _bwrap_works_cached():
    return bwrap_works()


def isolation_mode():
    """``"bwrap"`` (filesystem, network, process namespaces + limits) or ``"limits-only"``."""
    if os.environ.get("MHA_SAFEGRADE_NO_SANDBOX") == "1":
        return "limits-only"
    return "bwrap" if _bwrap_works_cached() else "limits-only"


def kernel_argv(mode, limits, pythonpath):
    """The command that starts a sandboxed kernel (a kernelspec's ``argv``, made in code).

    ``pythonpath``: folders put first on the kernel's ``sys.path`` and mounted read-only (the
    graded kit: ``mha_kit`` and the kernel side of ``mha_course``).
    """
    return [sys.executable, "-m", "mha_course.plugins.sandbox", "--mode", mode, "--limits", json.dumps(limits),
            "--pythonpath", os.pathsep.join(pythonpath), "-f", "{connection_file}"]


def _set_limits(limits):
    for name, value in limits.items():
        kind = getattr(resource, name)
        soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


def _clean_env(home):
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "PYDEVD_DISABLE_FILE_VALIDATION") if k in os.environ}
    return {**keep, "HOME": home, "TMPDIR": "/tmp", "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}


def _read_only_paths(pythonpath=()):
    """What the kernel may read: system folders, the Python environment and ``pythonpath``."""
    paths = {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", sys.prefix, sys.base_prefix,
             sysconfig.get_paths()["purelib"], *pythonpath}
    return sorted(p for p in paths if os.path.exists(p))


def _namespaces():
    """bwrap and its namespaces.

    As root, no user namespace: the kernel gives up root inside for a user id of its own. In a
    user namespace it would still be root outside, where the kernel exempts root from
    ``RLIMIT_NPROC``; an unused user id also owns no file outside the sandbox.
    """
    if _as_root():
        return [_BWRAP, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    return [_BWRAP, "--unshare-all", "--uid", "65534", "--gid", "65534"]


def _parents(paths, mounted=()):
    """The folders above the bind mounts ``paths`` that bwrap must create, shallowest first.

    Not the ``mounted`` points themselves (``/tmp``...), nor anything inside a bind mount (that is
    the host's own folder).
    """
    def covered(folder):
        return folder in mounted or any(folder == p or folder.startswith(p.rstrip("/") + "/") for p in paths)
    folders = {str(a) for p in paths for a in Path(p).parents if str(a) != "/"}
    return sorted((f for f in folders if not covered(f)), key=lambda f: (f.count("/"), f))


def bwrap_command(command, scratch, sockets=None, pythonpath=()):
    """``command`` wrapped in bubblewrap, working in ``scratch`` (read-only).

    The kernel writes files only to its ``/tmp``, a tmpfs of :data:`TMP_BYTES` (a full disk or
    memory cannot be its doing), and creates its Unix sockets in ``sockets``, which the grader
    closes once the kernel is up (see :mod:`.execute`). bwrap sets ``no_new_privs``, so nothing
    inside can gain rights (no set-user-id programs).
    """
    argv = [*_namespaces(), "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    read_only = [*_read_only_paths(pythonpath), scratch]
    writable = [sockets] if sockets else []
    for folder in _parents([*read_only, *writable], mounted=("/tmp", "/proc", "/dev")):
        argv += ["--perms", "0755", "--dir", folder]  # bwrap's default, 0700, would shut the kernel's user out
    for path in read_only:
        argv += ["--ro-bind", path, path]
    for path in writable:
        argv += ["--bind", path, path]
    argv += ["--chdir", scratch, "--"]
    return argv + command


def close_sockets(ipc_prefix):
    """Once the kernel has made its sockets: no more files in their folder (when the grader is root).

    The folder is root's; the kernel's own user id could write there only while it was open to all.
    As an ordinary user, the kernel's user is the grader's own and the folder stays as it is.
    """
    if ipc_prefix and _as_root():
        os.chmod(os.path.dirname(ipc_prefix), 0o755)


#: Where each kernel gets cgroups of its own (cgroup v1), when the machine lets us create them: a
#: cap on its processes, and on the memory of all of them together (``RLIMIT_AS`` is per process).
CGROUPS = {"pids": (Path("/sys/fs/cgroup/pids/mha_safegrade"), "pids.max", "RLIMIT_NPROC"),
           "memory": (Path("/sys/fs/cgroup/memory/mha_safegrade"), "memory.limit_in_bytes", "RLIMIT_AS")}


def _join_cgroups(limits):
    """Put this process (and so the kernel) in fresh cgroups; return the ones joined."""
    joined = []
    for kind, (root, knob, limit) in CGROUPS.items():
        try:
            folder = root / f"k{os.getpid()}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / knob).write_text(str(limits.get(limit, LIMITS[limit])))
            if kind == "memory" and (folder / "memory.memsw.limit_in_bytes").exists():  # swap counts too
                (folder / "memory.memsw.limit_in_bytes").write_text(str(limits.get(limit, LIMITS[limit])))
            (folder / "cgroup.procs").write_text(str(os.getpid()))
            joined.append(kind)
        except OSError:
            pass
    return joined


def remove_empty_cgroups():
    """Remove the kernels' cgroups that no process uses any more."""
    for root, _, _ in CGROUPS.values():
        for folder in root.glob("k*") if root.is_dir() else ():
            try:
                folder.rmdir()
            except OSError:
                pass


def _option(argv, name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default


def launch(argv):
    """Outside the sandbox: limits, environment, then ``exec`` bwrap (or the kernel, limits only)."""
    mode, limits = _option(argv, "--mode"), json.loads(_option(argv, "--limits"))
    scratch = os.getcwd()
    connection = json.loads(Path(_option(argv, "-f")).read_text())
    sockets = os.path.dirname(connection["ip"]) if connection.get("transport") == "ipc" else None
    # the connection file sits in the grader's runtime folder, which the sandbox cannot see
    connection_file = str(Path(sockets or scratch) / ".kernel-connection.json")
    shutil.copyfile(_option(argv, "-f"), connection_file)
    env = _clean_env("/tmp" if mode == "bwrap" else scratch)
    # the graded kit (mha_kit, the kernel side of mha_course) comes before anything the environment holds
    pythonpath = [p for p in (_option(argv, "--pythonpath") or "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(KERNEL_PATH), *pythonpath])
    # this file runs again inside as a script: the graded kit's mha_course has no plugins/
    inside = [sys.executable, str(Path(__file__).resolve()), "--inside", "-f", connection_file]
    if mode == "bwrap":
        inside += ["--nproc", str(limits.get("RLIMIT_NPROC", 256))]
        if _as_root():
            uid = KERNEL_UID_BASE + os.getpid()
            inside += ["--uid", str(uid)]
            os.chown(connection_file, uid, uid)
            if sockets:  # root's, open to all until the grader closes it (the kernel cannot reopen it)
                os.chmod(sockets, 0o1777)
    mounts = [str(KERNEL_PATH), str(Path(__file__).resolve()), *pythonpath]
    command = bwrap_command(inside, scratch, sockets, mounts) if mode == "bwrap" else inside
    # The kernel's own stdout/stderr (not the notebook's outputs) would reach the grader's terminal.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    # RLIMIT_NPROC counts every process of a user id, so it is set inside, for the kernel's user only.
    _set_limits({k: v for k, v in limits.items() if k != "RLIMIT_NPROC"})
    _join_cgroups(limits)
    grader = int(os.environ.get("MHA_GRADER_PID", os.getppid()))  # set by the worker that starts kernels
    child = os.fork()
    if child == 0:
        die_with(grader if os.getppid() == grader else os.getppid())
        os.execve(command[0], command, env)
    _supervise(child, grader)


def _supervise(child, grader, poll=0.2):
    """Wait for the sandbox ``child``; kill it as soon as the grader is gone (a killed batch).

    A parent-death signal alone is not enough: bwrap, as root, does not always keep it. This
    process stays in the kernel's process group, so jupyter_client's kill reaches both.
    """
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            os._exit(max(os.waitstatus_to_exitcode(status), 0))
        if os.getppid() != grader:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            os._exit(1)
        time.sleep(poll)


def die_with(parent):
    """Get SIGKILL when the process ``parent`` (this one's parent) dies; exit now if it already has.

    For a kernel's launcher (its grader; bwrap, and so the whole sandbox, go too) and for a pool
    worker (the batch). jupyter_client starts kernels in a session of their own, out of reach of a
    signal to the grader's process group, and bwrap's ``--die-with-parent`` guards only its inside.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG, kept across execve
    if os.getppid() != parent:  # it died before the line above, even before this process ran
        os._exit(1)


def start_kernel(argv):
    """Inside the sandbox: cap processes, give up root if the grader is root, run the kernel here."""
    if _option(argv, "--nproc"):
        _set_limits({"RLIMIT_NPROC": int(_option(argv, "--nproc"))})
    if _option(argv, "--uid"):
        uid = int(_option(argv, "--uid"))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)  # real, effective and saved: root's capabilities are gone for good
    try:  # numpy 1.x names the browser edition's numpy 1.25 has (np.float_, np.Inf): graded as written, with a note
        from mha_course.kernel.numpy2 import install  # the graded kit's copy
        install()
    except Exception:  # noqa: BLE001 (no numpy, no kit: the kernel starts as it would)
        pass
    without_debugger()
    sys.argv = ["ipykernel_launcher", "-f", _option(argv, "-f"), "--HistoryManager.hist_file=:memory:"]
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)


def without_debugger():
    """Start the kernel without debugpy: no debugger ever attaches to a graded kernel.

    ipykernel imports debugpy when it makes its kernel, and takes a kernel without a debugger when
    that import fails (``ipykernel.debugger._is_debugpy_available``); a ``None`` in ``sys.modules``
    makes it fail. debugpy's import was a quarter of a graded kernel's start: 0.41 CPU-seconds with
    it, 0.31 without (ipykernel 6.29, 2026-12-06), paid by every submission of a batch.
    """
    sys.modules["debugpy"] = None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--inside" in argv:
        start_kernel(argv)
    else:
        launch(argv)


if __name__ == "__main__":
    main()
