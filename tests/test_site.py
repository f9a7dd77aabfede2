"""The built site: a warning-free build, read in a real browser with no network.

The module builds the whole book once (executing every chapter), as `make book`
does, into a temporary folder. The browser tests serve that folder on
127.0.0.1, open each chapter in headless Debian Chromium with every request to
another host aborted, and fail on console errors, script errors, missing local
files, math that MathJax did not typeset, and a step-through animation that
does not step.
"""

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest
from booktoc import REPO_ROOT, source_of, toc_docnames, toc_entries

CHROMIUM = Path("/usr/bin/chromium")
# Flags for a headless browser with no network of its own: root in CI needs
# --no-sandbox; the rest stop Chromium phoning home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
BUILD_TIMEOUT_S = 900
PAGE_TIMEOUT_MS = 30_000
ANIMATED_CHAPTER = "book/step_through"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Site:
    returncode: int
    log: str
    html: Path

    def page(self, docname):
        return self.html / f"{docname}.html"


def jupyter_book_command():
    script = Path(sys.executable).with_name("jupyter-book")
    return str(script) if script.exists() else shutil.which("jupyter-book")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the book as `make book` does, into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    command = [
        jupyter_book_command(),
        "build", str(REPO_ROOT),
        "--path-output", str(out),
        "--builder", "html",
        "-W", "--keep-going", "-n",
    ]  # fmt: skip
    result = subprocess.run(
        command,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    log = ANSI_ESCAPE.sub("", result.stdout + result.stderr)
    return Site(result.returncode, log, out / "_build" / "html")


def test_build_succeeds_without_warnings(site):
    """jupyter-book build -W --keep-going -n exits 0 and logs no WARNING."""
    warnings = [line for line in site.log.splitlines() if "WARNING" in line]
    tail = "\n".join(site.log.splitlines()[-40:])
    assert not warnings, "the build logged warnings:\n" + "\n".join(warnings)
    assert site.returncode == 0, f"the build exited {site.returncode}; its log ends:\n{tail}"


@pytest.mark.parametrize("docname", toc_docnames())
def test_chapter_page_is_built(site, docname):
    """Every page _toc.yml lists exists as a source file and as a built page."""
    assert source_of(docname) is not None, f"_toc.yml lists {docname}, but no {docname}.ipynb/.md exists"
    assert site.page(docname).exists(), f"{docname}.html was not built (see the build log test)"


@pytest.mark.parametrize(
    "docname", [docname for docname, numbered in toc_entries() if numbered]
)
def test_chapter_heading_is_numbered(site, docname):
    """Chapters in a numbered part show their number in the title."""
    page = site.page(docname)
    if not page.exists():
        pytest.fail(f"{docname}.html was not built")
    headings = re.findall(r"<h1>(.*?)</h1>", page.read_text(encoding="utf-8"), re.DOTALL)
    assert any('class="section-number"' in h1 for h1 in headings), (
        f"{docname}.html: the title carries no chapter number"
    )


# --- the browser -------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
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


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright; never a downloaded browser."""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason + " -- the browser test may not be skipped in CI")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


def is_local(url):
    parsed = urlparse(url)
    return parsed.scheme in ("data", "blob", "about") or parsed.hostname in ("127.0.0.1", "localhost")


class PageVisit:
    """A browser tab that records everything that went wrong while it loaded."""

    def __init__(self, browser):
        self.page = browser.new_page()
        self.page.set_default_timeout(PAGE_TIMEOUT_MS)
        self.problems = []
        self.page.route("**/*", self._route)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"script error: {error}"))
        self.page.on("requestfailed", self._request_failed)
        self.page.on("response", self._response)

    def _route(self, route):
        url = route.request.url
        if is_local(url):
            route.continue_()
        else:
            self.problems.append(f"request to another host (blocked): {url}")
            route.abort()

    def _console(self, message):
        if message.type == "error":
            self.problems.append(f"console error: {message.text} (at {message.location.get('url')})")

    def _request_failed(self, request):
        if is_local(request.url):
            self.problems.append(f"local request failed: {request.url} ({request.failure})")

    def _response(self, response):
        if response.status >= 400 and is_local(response.url):
            self.problems.append(f"HTTP {response.status} for {response.url}")

    def close(self):
        self.page.close()


@pytest.fixture
def visit(browser):
    visits = []

    def open_tab():
        tab = PageVisit(browser)
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
    tab.page.goto(url, wait_until="load")
    tab.page.wait_for_load_state("networkidle")
    return tab.page.evaluate(WAIT_FOR_MATHJAX)


@pytest.mark.parametrize("docname", toc_docnames())
def test_chapter_renders_offline(server, visit, site, docname):
    """The chapter loads with no network, no errors, and all its math typeset."""
    if not site.page(docname).exists():
        pytest.fail(f"{docname}.html was not built")
    tab = visit()
    mathjax = load(tab, f"{server}/{docname}.html")
    assert not mathjax.startswith("MathJax never started"), f"{docname}: {mathjax}"
    unrendered = tab.page.evaluate(FIND_UNRENDERED_MATH)
    problems = tab.problems + unrendered
    assert not problems, f"{docname}.html:\n  " + "\n  ".join(problems)


def test_search_finds_attention(server, visit):
    """Sphinx's local search index answers a query without the network."""
    tab = visit()
    load(tab, f"{server}/search.html?q=attention")
    results = tab.page.locator("#search-results li")
    results.first.wait_for(state="attached")
    assert results.count() > 0, "searching for 'attention' found no page"
    assert not tab.problems, "search.html:\n  " + "\n  ".join(tab.problems)


def test_step_through_animation_steps(server, visit, site):
    """The step-through animation moves a frame forward and back to the first."""
    if not site.page(ANIMATED_CHAPTER).exists():
        pytest.fail(f"{ANIMATED_CHAPTER}.html was not built")
    tab = visit()
    load(tab, f"{server}/{ANIMATED_CHAPTER}.html")
    animations = tab.page.locator("div.animation")
    assert animations.count() > 0, f"{ANIMATED_CHAPTER}.html has no matplotlib jshtml animation"
    animation = animations.first
    image = animation.locator("img").first
    next_button = animation.locator("button[title='Next frame']")
    first_button = animation.locator("button[title='First frame']")
    assert next_button.locator("svg").count() == 1, "the 'Next frame' button shows no icon"

    first_frame = image.get_attribute("src")
    assert first_frame, "the animation shows no frame"
    next_button.click()
    second_frame = image.get_attribute("src")
    assert second_frame != first_frame, "clicking 'Next frame' did not change the picture"
    first_button.click()
    assert image.get_attribute("src") == first_frame, "'First frame' did not bring back frame 1"
    assert not tab.problems, f"{ANIMATED_CHAPTER}.html:\n  " + "\n  ".join(tab.problems)
