"""What the site's test modules share: the one build of the learner edition, its server, the browser and
a tab that records what went wrong while a page loaded.

`tests/test_site.py` reads the built pages, `tests/test_site_pages_a.py` and `_b.py` load each page for its
report, `tests/test_site_lite.py` runs the browser edition (JupyterLite) in them. They are four modules so that pytest-xdist (`--dist loadfile`) runs them on several workers at once, after
the one build they share (:func:`shared_build`); the fixtures are imported into
each module, so each has its own browser and server.
"""
import fcntl
import functools
import http.server
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import lite_support as lite
import pytest
from booktoc import REPO_ROOT, source_of, toc_docnames

from website import build as build_site
from website.ext import learner_edition, stored_outputs

# The pages of the learner edition: every page of _toc.yml but the instructor's guide.
SITE_DOCNAMES = [docname for docname in toc_docnames() if docname not in learner_edition.LEARNER_EXCLUDED]

# Debian's chromium-headless-shell: Chromium's headless mode without the full browser's layers, the
# browser Playwright itself runs for headless tests (same Blink, same V8). With it the page reports
# cost a quarter less CPU than with /usr/bin/chromium, and this module a third less (measured on 2
# cores, 2026-12-02); the full browser stands in where only it is installed.
HEADLESS_SHELL = Path("/usr/bin/chromium-headless-shell")
CHROMIUM = HEADLESS_SHELL if HEADLESS_SHELL.exists() or not Path("/usr/bin/chromium").exists() else Path("/usr/bin/chromium")
NO_BROWSER = (f"no headless Chromium ({HEADLESS_SHELL} or /usr/bin/chromium): install Debian's "
              "chromium-headless-shell (apt-get install chromium-headless-shell)")
# Flags for a headless browser with no network of its own: root in CI needs
# --no-sandbox; the next ones stop Chromium phoning home; the proxy sends every request to another host
# to a port where nothing listens (Chromium goes to the loopback addresses directly), so it fails there
# (PageVisit records it). Until 2026-12-06 (third session) each tab routed every request through
# Playwright to abort those: a round trip to the test's Python for each of a page's files, which doubled
# the CPU of loading the site's pages (33 -> 68 CPU-seconds for the 55 chapters, measured on 2 cores).
DEAD_PROXY = "http://127.0.0.1:9"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    f"--proxy-server={DEAD_PROXY}",
    "--proxy-bypass-list=127.0.0.1;localhost",
]
BUILD_TIMEOUT_S = 900
PAGE_TIMEOUT_MS = 30_000


@dataclass
class Site:
    returncode: int
    log: str
    html: Path

    def page(self, docname):
        return self.html / f"{docname}.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory, request):
    """The learner edition, built as `make learner-book` does (or the build MHA_BUILT_SITE names)."""
    built = os.environ.get("MHA_BUILT_SITE")
    if built:
        out = Path(built).resolve()
        status = json.loads((out / "build.json").read_text())
        if not status.get("learner"):
            pytest.fail(f"MHA_BUILT_SITE={built} is not a learner edition (make learner-book builds one)")
        return Site(status["returncode"], (out / "build.log").read_text(encoding="utf-8"), out / "html")
    return shared_build(tmp_path_factory, lambda out: build_site.build(
        out, learner=True, timeout=BUILD_TIMEOUT_S, stored_outputs=outputs_checked_by_nbval(request.session)))


def shared_build(tmp_path_factory, build):
    """``build(folder)`` (``(returncode, log)``) run once in this test run, by whichever test module asks
    first: under pytest-xdist the site's modules run on several workers at once, and the others wait
    for that build (a lock on a file of the run's own temporary folder) and read it.

    A build that raised is recorded too: the modules after it fail with its error rather than build again.
    """
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each worker's own
    out, record = shared / "site", shared / "site.json"
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the worker dies
        if not record.exists():
            try:
                returncode, log = build(out)
                record.write_text(json.dumps({"returncode": returncode, "log": log}), encoding="utf-8")
            except Exception as error:
                record.write_text(json.dumps({"error": f"{type(error).__name__}: {error}"}), encoding="utf-8")
                raise
    status = json.loads(record.read_text(encoding="utf-8"))
    if "error" in status:
        pytest.fail(f"the site build failed in another test module: {status['error']}")
    return Site(status["returncode"], status["log"], out / "html")


def outputs_checked_by_nbval(session):
    """The site's notebooks whose stored outputs this run's nbval compares with a fresh execution
    (``--nbval``, not deselected), less those that run differently in the learner edition."""
    if not session.config.getoption("nbval", default=False):
        return []
    checked = {Path(item.path).resolve() for item in session.items if Path(item.path).suffix == ".ipynb"}
    notebooks = [source_of(docname) for docname in SITE_DOCNAMES]
    return [nb.relative_to(REPO_ROOT).as_posix() for nb in notebooks
            if nb is not None and nb.resolve() in checked and not stored_outputs.runs_per_edition(nb)]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    # keep-alive: the browser reuses a few connections per page instead of opening one per file
    # (about 700 connections fewer in this module, fewer local ports taken while kernels start)
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass  # keep pytest's output to failures


@pytest.fixture(scope="module")
def server(site):
    """Serve the built site on 127.0.0.1 at a free port; yields its base URL."""
    if not site.html.exists():
        pytest.fail("the build produced no HTML to serve (see the build log test)")
    handler = functools.partial(_QuietHandler, directory=str(site.html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def require_browser():
    """Skip the calling test where no headless Chromium is installed; fail it in CI, where one must be."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(NO_BROWSER + " -- the browser test may not be skipped in CI")
        pytest.skip(NO_BROWSER)


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright; never a downloaded browser."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


def is_local(url):
    parsed = urlparse(url)
    return parsed.scheme in ("data", "blob", "about", "file") or parsed.hostname in ("127.0.0.1", "localhost")


class PageVisit:
    """A browser tab that records everything that went wrong while it loaded."""

    def __init__(self, browser, **options):
        self.page = browser.new_page(**options)
        self.page.set_default_timeout(PAGE_TIMEOUT_MS)
        self.problems = []
        self.in_flight, self.last_request = set(), time.monotonic()  # the page's open requests (settle)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"script error: {error}"))
        self.page.on("request", self._request)
        self.page.on("requestfinished", self._request_done)
        self.page.on("requestfailed", self._request_failed)
        self.page.on("response", self._response)

    def _request(self, request):
        self.in_flight.add(request)
        self.last_request = time.monotonic()
        if urlparse(request.url).scheme in ("http", "https", "ws", "wss") and not is_local(request.url):
            # it fails at the dead proxy (CHROMIUM_ARGS); a page's own schemes (JupyterLab's attachment:) stay
            self.problems.append(f"request to another host (blocked): {request.url}")

    def _request_done(self, request):
        self.in_flight.discard(request)
        self.last_request = time.monotonic()

    def _console(self, message):
        if message.type == "error":
            self.problems.append(f"console error: {message.text} (at {message.location.get('url')})")

    def _request_failed(self, request):
        self._request_done(request)
        if is_local(request.url):
            self.problems.append(f"local request failed: {request.url} ({request.failure})")

    def _response(self, response):
        if response.status >= 400 and is_local(response.url):
            self.problems.append(f"HTTP {response.status} for {response.url}")

    def reload(self):
        """Reload the page as a reader does, once it has loaded, and wait for it as :func:`load` does.

        What the page was still fetching when it reloaded (MathJax's fonts, asked for as it typesets)
        would be cut off and recorded as failed requests: in a full test run on 2 cores, 2026-12-02,
        a font request the test's own reload aborted failed the flashcards test."""
        settle(self)
        self.page.reload(wait_until="load")
        settle(self)
        self.page.evaluate(WAIT_FOR_MATHJAX)
        settle(self, quiet_s=0.2)  # the fonts the typesetting asked for

    def reset(self):
        """Start a new record for the next page this tab goes to (one tab, many pages: page_reports)."""
        self.problems, self.in_flight, self.last_request = [], set(), time.monotonic()

    def close(self):
        self.page.close()


@pytest.fixture
def visit(browser):
    visits = []

    def open_tab(**options):
        tab = PageVisit(browser, **options)
        visits.append(tab)
        return tab

    yield open_tab
    for tab in visits:
        tab.close()


WAIT_FOR_MATHJAX = """
async () => {
  const script = document.querySelector('script[src*="mathjax"]');
  if (!script) return "no MathJax on this page";
  for (let i = 0; i < 200 && !(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (!(window.MathJax && window.MathJax.startup)) return "MathJax never started (" + script.src + ")";
  await window.MathJax.startup.promise;
  return "typeset";
}
"""

# Math elements MathJax left alone, and raw TeX delimiters in visible prose.
FIND_UNRENDERED_MATH = r"""
() => {
  const bad = [];
  for (const el of document.querySelectorAll('.math')) {
    if (!el.querySelector('mjx-container')) bad.push('untypeset .math: ' + el.textContent.trim().slice(0, 80));
  }
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent;
    if (!/\\\(|\\\[|\$\$/.test(text)) continue;
    if (node.parentElement && node.parentElement.closest(skip)) continue;
    bad.push('raw TeX in text: ' + text.trim().slice(0, 80));
  }
  return bad;
}
"""


def load(tab, url):
    """Open ``url`` and wait for MathJax; a page the server does not have fails at once, not after
    every later wait on it has timed out (a failed build would otherwise cost minutes)."""
    response = tab.page.goto(url, wait_until="load")
    if response is not None and not response.ok:
        raise AssertionError(f"HTTP {response.status} for {url}: the build did not make this page")
    settle(tab)
    return tab.page.evaluate(WAIT_FOR_MATHJAX)


class PageTimeout(TimeoutError):
    """A page whose requests had not settled within PAGE_TIMEOUT_MS."""


def settle(tab, quiet_s=0.5, timeout_s=PAGE_TIMEOUT_MS / 1000):
    """Wait until the page has had no request open for ``quiet_s`` (at least ``quiet_s`` from now):
    Playwright's "networkidle", but one that names the requests still open when it gives up."""
    start = time.monotonic()
    deadline = start + timeout_s
    while tab.in_flight or time.monotonic() - max(tab.last_request, start) < quiet_s:
        if time.monotonic() > deadline:
            still = sorted(request.url for request in tab.in_flight) or ["none open: requests kept starting"]
            raise PageTimeout(f"requests still open after {timeout_s:g} s: {', '.join(still[:5])}")
        tab.page.wait_for_timeout(50)  # Playwright delivers the page's events meanwhile


def lite_summary(site):
    """The browser edition's record of what it holds (``lite/mha-lite.json``: its chapters and exercises)."""
    summary = site.html / "lite" / "mha-lite.json"
    if not summary.exists():
        pytest.fail("the learner edition has no browser edition (lite/mha-lite.json): see the build log test")
    return json.loads(summary.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def lite_lab(server, browser, site):
    """JupyterLite opened once, on the release of the worked assignment, its kernel started: the one kernel
    a module's browser-edition tests run (a kernel's first start costs tens of CPU seconds)."""
    lite_summary(site)
    tab = PageVisit(browser)
    tab.page.route("**/lite/jupyter-lite.json", lite.expose_app)
    assignment = lite.worked_assignment()
    path = f"exercises/{assignment}/{assignment}.ipynb"
    tab.page.goto(f"{server}/lite/lab/index.html?path={path}", wait_until="load")
    tab.page.wait_for_function(f"() => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
                               f"window.jupyterapp.shell.currentWidget.context.path === {json.dumps(path)}",
                               timeout=lite.KERNEL_TIMEOUT_MS)
    tab.page.evaluate(lite.START_KERNEL)
    tab.page.wait_for_function("() => window.mhaKernelName", timeout=lite.KERNEL_TIMEOUT_MS)
    yield tab, assignment, path
    tab.close()


#: Issue 36: run only these browser-edition notebooks top to bottom (comma-separated paths under lite/files,
#: e.g. "book/continuous_batching.ipynb"), for a quick run on a loaded machine; unset: every one.
LITE_ONLY = os.environ.get("MHA_LITE_ONLY")


def error_lines(got):
    """The errors a cell run in the page's kernel shows, its exception named as on the desktop (xeus-python
    names the class "<class 'module.Name'>": the desktop's "Name")."""
    return [re.sub(r"^<class '(?:[\w.]+\.)?(\w+)'>", r"\1", error) for error in got["errors"]]
