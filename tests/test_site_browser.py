"""tests/site_browser.py's one build per test run: the site's three modules, on three pytest-xdist workers,
build the site once; the others wait for it and read it, and a build that raised fails them with its error."""
import multiprocessing
import os
from types import SimpleNamespace

import pytest
import site_browser


def _factory(base):
    return SimpleNamespace(getbasetemp=lambda: base)


def _build_in(base, record):
    """A worker's call: a slow build that writes a page and counts itself in ``record``."""
    def build(out):
        with open(record, "a") as f:
            f.write("built\n")
        (out / "html").mkdir(parents=True)
        (out / "html" / "index.html").write_text("<h1>ok</h1>")
        import time
        time.sleep(0.3)  # long enough that the other worker asks while this one builds
        return 0, "the log"
    site = site_browser.shared_build(_factory(base), build)
    assert (site.returncode, site.log, site.page("index").read_text()) == (0, "the log", "<h1>ok</h1>")


def test_two_workers_build_the_site_once(tmp_path, monkeypatch):
    run = tmp_path / "pytest-1"
    for worker in ("gw0", "gw1"):
        (run / f"popen-{worker}").mkdir(parents=True)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")  # the shared folder is above each worker's own
    record = tmp_path / "builds.txt"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_build_in, args=(run / f"popen-{w}", record)) for w in ("gw0", "gw1")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert [w.exitcode for w in workers] == [0, 0]
    assert record.read_text() == "built\n"
    assert (run / "site" / "html" / "index.html").exists()


def test_a_build_that_raised_fails_the_modules_after_it_with_its_error(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)

    def broken(out):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        site_browser.shared_build(_factory(tmp_path), broken)
    with pytest.raises(pytest.fail.Exception, match=r"the site build failed in another test module: OSError: disk full"):
        site_browser.shared_build(_factory(tmp_path), lambda out: (0, "never built"))
    assert not os.path.exists(tmp_path / "site")
