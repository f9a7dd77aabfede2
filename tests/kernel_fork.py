"""nbval's chapter kernels started by ``fork`` from a warm process, not by a fresh interpreter.

Each of the ~70 notebooks ``make test`` checks with nbval starts a kernel, and every such kernel
spent about 0.65 CPU-seconds before its first cell had run: 0.24 starting Python, ipykernel and
its application, 0.45 in the first cell importing numpy, matplotlib and mha_kit (measured on 2
cores, 2026-12-07: a kernel's own CPU time at kernel_info, then after that import cell). Here a
*zygote* (one per pytest process, started at the first kernel it is asked for) imports those
modules once and waits on a Unix socket; a kernel is a ``fork`` of it, which then runs
``ipykernel_launcher`` exactly as ``python -c WITHOUT_DEBUGGER -f <connection file>`` would.

jupyter_client still launches a process and manages it as its kernel: the small *client* below
(``python -I -S kernel_fork.py <socket> -f <connection file>``, standard library only). It hands
the zygote its working folder, environment, arguments and its standard input, output and error
(file descriptors over the socket), then stays until the kernel exits and exits with its status.
Signals jupyter_client sends the client's process group (SIGINT to interrupt, SIGTERM) are passed
on to the kernel; when the client dies (SIGKILL: jupyter_client's ``kill``), the zygote sees the
socket close and kills the kernel.

What a forked kernel shares with its zygote, and why the checks are unchanged: modules in
``sys.modules`` (never names in the notebook's namespace: a chapter that forgets an import still
fails); Python's ``random`` and numpy's global generator are seeded afresh from the system in each
kernel, as in a new interpreter; the string hash seed is the zygote's (one per pytest process, new
each run). matplotlib is imported with the inline backend that ipykernel would set (MPLBACKEND,
ipykernel/kernelapp.py, ``init_gui_pylab``'s caller), but the backend's own module is not: importing
``matplotlib_inline.backend_inline`` hooks figures into the IPython shell running at that moment
(``_enable_matplotlib_integration``), and in the zygote there is none, so a kernel forked after that
import would show no figure. tests/test_kernel_fork.py runs the same probe and figure cell in a forked
and a fresh kernel and compares what they send. Only nbval's kernels fork: graded kernels start
in their sandbox as before, and ``make book`` and the site build execute chapters in fresh kernels.
"""
import array
import json
import os
import select
import signal
import socket
import struct
import sys

#: Modules a chapter's kernel imports before its first output; imported once, in the zygote.
WARM = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel_launcher",
        "numpy", "matplotlib", "matplotlib.pyplot", "mha_kit")
INLINE = "module://matplotlib_inline.backend_inline"
FDS = 3  # the client's standard input, output and error


def _send(sock, message, fds=()):
    data = json.dumps(message).encode()
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([struct.pack("!I", len(data)), data], ancillary)


def _receive(sock, with_fds=False):
    """One message (and the file descriptors sent with it), or None at end of stream."""
    fds = array.array("i")
    head, ancillary, _, _ = sock.recvmsg(4, socket.CMSG_SPACE(FDS * fds.itemsize) if with_fds else 0)
    if not head:
        return (None, []) if with_fds else None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    (size,) = struct.unpack("!I", head)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the zygote's peer closed the socket in the middle of a message")
        data += chunk
    message = json.loads(data)
    return (message, list(fds)) if with_fds else message


# --- the client: what jupyter_client launches ------------------------------------------------------

def client(path, argv):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    _send(sock, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}, fds=(0, 1, 2))
    pid = _receive(sock)["pid"]

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    reply = _receive(sock)  # a signal forwarded meanwhile does not interrupt it (PEP 475 retries the call)
    status = 1 if reply is None else reply["status"]
    if status < 0:  # killed by a signal: die by the same one, as the kernel did
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


# --- the zygote --------------------------------------------------------------------------------------

def _become_kernel(request, fds, listener, others):
    """In the forked child: the client's stdio, folder, environment and arguments, then ipykernel."""
    listener.close()
    for sock in others:
        sock.close()
    for signum in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.setdefault("MPLBACKEND", INLINE)
    import random

    import numpy
    random.seed()
    numpy.random.seed()
    sys.path[0] = ""  # as for `python -c`: the working folder first
    sys.argv = ["-c", *request["argv"]]
    # ipykernel reads JPY_PARENT_PID when its module is imported (IPKernelApp.parent_handle's default),
    # here in the zygote, before the kernel's environment was known: given again, as configuration
    if request["env"].get("JPY_PARENT_PID"):
        sys.argv.append(f"--IPKernelApp.parent_handle={int(request['env']['JPY_PARENT_PID'])}")
    import runpy
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def zygote(path, parent):
    """Import :data:`WARM`, then fork a kernel for each client that connects to ``path`` until the
    process ``parent`` (the pytest process that started it) is gone."""
    sys.modules["debugpy"] = None  # no debugger in nbval's kernels (nbval_kernels.WITHOUT_DEBUGGER)
    os.environ["MPLBACKEND"] = INLINE
    import gc
    import importlib
    for name in WARM:
        importlib.import_module(name)
    # the imported objects out of the collector's reach: a collection in a kernel would otherwise touch
    # every one of them and copy the zygote's pages into the kernel (copy-on-write)
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    wake_read, wake_write = os.pipe()  # a kernel's exit wakes the loop at once (SIGCHLD)
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    kernels = {}  # client socket -> kernel pid
    while os.getppid() == parent:
        readable, _, _ = select.select([listener, wake_read, *kernels], [], [], 0.5)
        for sock in readable:
            if sock is wake_read:
                try:
                    os.read(wake_read, 512)
                except BlockingIOError:
                    pass
            elif sock is listener:
                conn, _ = listener.accept()
                request, fds = _receive(conn, with_fds=True)
                if request is None or len(fds) != FDS:
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    os.close(wake_read)
                    os.close(wake_write)
                    _become_kernel(request, fds, listener, [conn, *kernels])
                for fd in fds:
                    os.close(fd)
                kernels[conn] = pid
                _send(conn, {"pid": pid})
            else:  # a client went away (killed): its kernel goes too
                pid = kernels.pop(sock)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                sock.close()
        for conn, pid in list(kernels.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                try:
                    _send(conn, {"status": code})
                except OSError:
                    pass
                conn.close()
                del kernels[conn]
        # children whose clients died already
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    for pid in kernels.values():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":
        zygote(sys.argv[2], int(sys.argv[3]))
    else:
        client(sys.argv[1], sys.argv[2:])
