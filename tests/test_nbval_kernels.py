"""nbval's kernels are started again when one dies before it answers (tests/nbval_kernels.py)."""
import inspect
import logging
import pprint

import pytest
from nbval_kernels import ATTEMPTS, DIED, retried


def starter(outcomes):
    """A stand-in for nbval.kernel.start_new_kernel: each call takes the next outcome (raised if an error)."""
    calls = []

    def start(**kwargs):
        calls.append(kwargs)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return start, calls


def test_a_kernel_that_dies_at_start_is_started_again():
    start, calls = starter([RuntimeError(DIED), RuntimeError(DIED), ("km", "kc")])
    assert retried(start)(kernel_name="k", startup_timeout=60) == ("km", "kc")
    assert calls == [{"kernel_name": "k", "startup_timeout": 60}] * 3


def test_a_kernel_that_dies_at_every_start_fails_with_its_error():
    start, calls = starter([RuntimeError(DIED)] * (ATTEMPTS + 1))
    with pytest.raises(RuntimeError, match=DIED):
        retried(start)()
    assert len(calls) == ATTEMPTS == 3


def test_any_other_failure_is_not_retried():
    start, calls = starter([RuntimeError("Kernel didn't respond to heartbeats in 60 seconds and timed out"), "x"])
    with pytest.raises(RuntimeError, match="heartbeats"):
        retried(start)()
    assert len(calls) == 1


def test_nbval_in_this_run_starts_its_kernels_through_the_retry():
    kernel = pytest.importorskip("nbval.kernel")
    assert getattr(kernel.start_new_kernel, "retried", False), "tests/conftest.py did not install the retry"
    # nbval's RunningKernel looks the function up in its module at each start: the one installed
    assert "start_new_kernel(" in inspect.getsource(kernel.RunningKernel.__init__)


def test_nbval_kernels_start_without_a_debugger():
    """After install(), nbval's current-environment kernel answers with ipykernel's debugger switched off;
    the spec nbval would use without it starts ``python -m ipykernel_launcher`` (debugpy imported)."""
    nbval_kernel = pytest.importorskip("nbval.kernel")
    import nbval_kernels

    plain = inspect.unwrap(nbval_kernel.NbvalKernelspecManager.get_kernel_spec)
    assert plain(nbval_kernel.NbvalKernelspecManager(), nbval_kernel.CURRENT_ENV_KERNEL_NAME).argv[1:3] == [
        "-m", "ipykernel_launcher"]
    nbval_kernels.install()
    km, kc = nbval_kernel.start_new_kernel(kernel_name=nbval_kernel.CURRENT_ENV_KERNEL_NAME)
    try:
        out = []
        kc.execute_interactive("from ipykernel.debugger import _is_debugpy_available as a; print(a)", timeout=60,
                               output_hook=lambda msg: out.append(msg["content"].get("text", "")))
        assert "".join(out).strip() == "False"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_message_log_lines_are_formatted_only_when_written(caplog):
    """nbval's get_message formats each message for its debug line with the name pformat: after install() that
    is nbval_kernels.Lazy, so a message is formatted only when the line is written, as pprint would format it."""
    nbval_kernel = pytest.importorskip("nbval.kernel")
    import nbval_kernels

    nbval_kernels.install()
    assert nbval_kernel.pformat is nbval_kernels.Lazy
    assert "pformat(msg)" in inspect.getsource(nbval_kernel.RunningKernel.get_message)
    formatted = []

    class Message(dict):
        def __repr__(self):
            formatted.append(1)
            return dict.__repr__(self)

    message = Message(header={"msg_type": "stream"}, content={"text": "x" * 100})
    nbval_kernel.logger.debug("Kernel message (%s):\n%s", "iopub", nbval_kernel.pformat(message))
    assert formatted == []  # debug lines are off in a test run: nothing formatted
    with caplog.at_level(logging.DEBUG, logger=nbval_kernel.logger.name):
        nbval_kernel.logger.debug("Kernel message (%s):\n%s", "iopub", nbval_kernel.pformat(message))
    assert caplog.records[-1].getMessage() == f"Kernel message (iopub):\n{pprint.pformat(message)}"


def test_notebooks_the_tests_run_with_nbclient_talk_over_unix_sockets():
    """tests/nbval_kernels.execute_over_ipc: no TCP port for another process to take first (jupyter_client #487)."""
    import nbformat

    from nbval_kernels import execute_over_ipc

    source = "from ipykernel.connect import get_connection_info\nprint(get_connection_info(unpack=True)['transport'])"
    nb = execute_over_ipc(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), timeout=60,
                          kernel_name="python3")
    assert nb.cells[0].outputs[0]["text"] == "ipc\n"
