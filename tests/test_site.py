"""The built site: a warning-free build, read in a real browser with no network.

The module builds the whole book once, as `make learner-book` does (tools/build_site.py, the
learner edition that is published), into a temporary folder; with MHA_BUILT_SITE=<folder> set
(after `make learner-book`), it reads that build instead of making another. A chapter that
nbval re-executes and compares in the same run (`make test`, CI) is built from its stored outputs
rather than executed a second time (tools/stored_outputs.py); every other chapter executes.
Every browser test in the project lives in this one module, so that pytest-xdist's --dist
loadfile gives them the one build. Each page is loaded once for what the page tests check
(page_reports, with PROBES for what more a test reads from it); the calculator's and the
drills' tests share one visit each.

The browser tests serve that folder on 127.0.0.1, open each chapter in headless Debian
Chromium with every request to another host aborted, and fail on console errors, script
errors, missing local files, math that MathJax did not typeset, and a step-through animation
that does not step. Then they drive the live calculator and the drills and compare every
number they show with mha_kit, run the axe-core accessibility checker on every page, and
check that the learner edition holds no answer, no hidden test and no placeholder link.
"""

import dataclasses
import functools
import http.server
import json
import os
import random
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest
import site_support as support
from booktoc import REPO_ROOT, source_of, toc_docnames, toc_entries

sys.path.insert(0, str(REPO_ROOT / "tools"))
import build_site  # noqa: E402  (tools/ is not a package)
import learner_edition  # noqa: E402
import practice_pages  # noqa: E402
import stored_outputs  # noqa: E402

import mha_kit as mk  # noqa: E402

# The pages of the learner edition: every page of _toc.yml but the instructor's guide.
SITE_DOCNAMES = [docname for docname in toc_docnames() if docname not in learner_edition.LEARNER_EXCLUDED]

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
    out = tmp_path_factory.mktemp("site")
    returncode, log = build_site.build(out, learner=True, timeout=BUILD_TIMEOUT_S,
                                       stored_outputs=outputs_checked_by_nbval(request.session))
    return Site(returncode, log, out / "html")


def outputs_checked_by_nbval(session):
    """The site's notebooks whose stored outputs this run's nbval compares with a fresh execution
    (``--nbval``, not deselected), less those that run differently in the learner edition."""
    if not session.config.getoption("nbval", default=False):
        return []
    checked = {Path(item.path).resolve() for item in session.items if Path(item.path).suffix == ".ipynb"}
    notebooks = [source_of(docname) for docname in SITE_DOCNAMES]
    return [nb.relative_to(REPO_ROOT).as_posix() for nb in notebooks
            if nb is not None and nb.resolve() in checked and not stored_outputs.runs_per_edition(nb)]


def test_build_succeeds_without_warnings(site):
    """jupyter-book build -W --keep-going -n exits 0 and logs no WARNING."""
    warnings = [line for line in site.log.splitlines() if "WARNING" in line]
    tail = "\n".join(site.log.splitlines()[-40:])
    assert not warnings, "the build logged warnings:\n" + "\n".join(warnings)
    assert site.returncode == 0, f"the build exited {site.returncode}; its log ends:\n{tail}"


@pytest.mark.parametrize("docname", SITE_DOCNAMES)
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
    return parsed.scheme in ("data", "blob", "about", "file") or parsed.hostname in ("127.0.0.1", "localhost")


class PageVisit:
    """A browser tab that records everything that went wrong while it loaded."""

    def __init__(self, browser, **options):
        self.page = browser.new_page(**options)
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
    tab.page.wait_for_load_state("networkidle")
    return tab.page.evaluate(WAIT_FOR_MATHJAX)


AXE_IMPACTS = ("serious", "critical")
# search.html is checked with a query's results on it, which the search tests then read.
SEARCH = "search"
SEARCH_QUERY = "scores"


def _axe_pages():
    return [*SITE_DOCNAMES, SEARCH]


def _page_url(server, docname):
    return f"{server}/{docname}.html" + (f"?q={SEARCH_QUERY}" if docname == SEARCH else "")


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe  # bundles axe-core: nothing is downloaded

    return Axe()


@dataclass
class PageReport:
    """One page opened once: what its load went wrong (or the error that stopped it), and axe-core's
    serious and critical violations on the loaded page."""

    mathjax: str = ""
    problems: list = dataclasses.field(default_factory=list)
    violations: list = dataclasses.field(default_factory=list)
    error: str = ""
    seen: dict = dataclasses.field(default_factory=dict)  # what the page's probe saw (PROBES)


def _search_results(page):
    """Wait for the query's results and their summaries; what the search tests read."""
    results = page.locator("#search-results li")
    results.first.wait_for(state="attached")
    page.wait_for_function("() => document.querySelectorAll('#search-results li p.context').length > 0")
    page.wait_for_timeout(500)  # the summaries arrive one fetch at a time
    return {"results": results.count(), "text": page.locator("#search-results").inner_text()}


def _animation_steps(page):
    """Step the first animation forward and back to its first frame; the frames it showed."""
    animations = page.locator("div.animation")
    if animations.count() == 0:
        return {"animations": 0}
    animation = animations.first
    image = animation.locator("img").first
    next_button = animation.locator("button[title='Next frame']")
    frames = [image.get_attribute("src")]
    next_button.click()
    frames.append(image.get_attribute("src"))
    animation.locator("button[title='First frame']").click()
    frames.append(image.get_attribute("src"))
    return {"animations": animations.count(), "next_icons": next_button.locator("svg").count(), "frames": frames}


# A test that needs more of a page than its load reads it from the same visit, not a second one:
# page -> (what to do before axe-core runs, what to do after). The page's problems include both.
PROBES = {
    SEARCH: (_search_results, None),
    ANIMATED_CHAPTER: (None, _animation_steps),
}


def _probe(report, step, page):
    try:
        report.seen.update(step(page))
    except Exception as error:  # the probe's test fails, not the page's other tests
        report.seen["probe_error"] = f"{type(error).__name__}: {error}"


def _report(browser, axe, url, probes=(None, None)):
    tab = PageVisit(browser)
    report = PageReport()
    before, after = probes
    try:
        report.mathjax = load(tab, url)
        if before:
            _probe(report, before, tab.page)
        # The page's problems are those before axe-core runs (its stylesheet fetches are its own),
        # and those of the probe after it.
        problems = tab.problems + tab.page.evaluate(FIND_UNRENDERED_MATH)
        results = axe.run(tab.page, options={"resultTypes": ["violations"],
                                             "rules": {"image-alt": {"enabled": False}}})
        report.violations = [v for v in results.response["violations"] if v["impact"] in AXE_IMPACTS]
        if after:
            seen_by_axe = len(tab.problems)
            _probe(report, after, tab.page)
            problems += tab.problems[seen_by_axe:]
        report.problems = problems
    except Exception as error:  # a page that fails to load fails its own tests, not the others
        report.error = f"{type(error).__name__}: {error}"
    finally:
        tab.close()
    return report


@pytest.fixture(scope="module")
def page_reports(server, browser, axe, site):
    """Every page of the site and search.html (with a query's results), each loaded once for the
    rendering test, the accessibility checker and the page's probe (PROBES): a page load with
    MathJax costs as much as the check."""
    return {docname: _report(browser, axe, _page_url(server, docname), PROBES.get(docname, (None, None)))
            for docname in _axe_pages() if site.page(docname).exists()}


@pytest.mark.parametrize("docname", SITE_DOCNAMES)
def test_chapter_renders_offline(page_reports, site, docname):
    """The chapter loads with no network, no errors, and all its math typeset."""
    if not site.page(docname).exists():
        pytest.fail(f"{docname}.html was not built")
    report = page_reports[docname]
    assert not report.error, f"{docname}.html could not be checked: {report.error}"
    assert not report.mathjax.startswith("MathJax never started"), f"{docname}: {report.mathjax}"
    assert not report.problems, f"{docname}.html:\n  " + "\n  ".join(report.problems)


def _seen(page_reports, docname):
    """What the page's probe saw in page_reports' visit (the probe's own error fails here)."""
    if docname not in page_reports:
        pytest.fail(f"{docname}.html was not built")
    report = page_reports[docname]
    assert not report.error, f"{docname}.html could not be checked: {report.error}"
    assert "probe_error" not in report.seen, f"{docname}.html: {report.seen['probe_error']}"
    return report


def test_search_finds_pages(page_reports):
    """Sphinx's local search index answers a query without the network."""
    report = _seen(page_reports, SEARCH)
    assert report.seen["results"] > 0, f"searching for {SEARCH_QUERY!r} found no page"
    assert not report.problems, "search.html:\n  " + "\n  ".join(report.problems)


def test_step_through_animation_steps(page_reports):
    """The step-through animation moves a frame forward and back to the first."""
    report = _seen(page_reports, ANIMATED_CHAPTER)
    seen = report.seen
    assert seen["animations"] > 0, f"{ANIMATED_CHAPTER}.html has no matplotlib jshtml animation"
    assert seen["next_icons"] == 1, "the 'Next frame' button shows no icon"
    first_frame, second_frame, back = seen["frames"]
    assert first_frame, "the animation shows no frame"
    assert second_frame != first_frame, "clicking 'Next frame' did not change the picture"
    assert back == first_frame, "'First frame' did not bring back frame 1"
    assert not report.problems, f"{ANIMATED_CHAPTER}.html:\n  " + "\n  ".join(report.problems)


# --- the live calculator -----------------------------------------------------------------------

CALCULATOR = "book/kv_cache_calculator"
DRILLS = "book/drills"
RANDOM_CASES = 3000
# Every number the page's compute() returns, for a batch of cases, in one round trip.
COMPUTE_ALL = """
(cases) => cases.map(([cfg, context, batch, dtype, memory]) => {
  try { return window.MHA.compute(cfg, context, batch, dtype, BigInt(memory)); }
  catch (error) { return {error: String(error)}; }
})
"""


@pytest.fixture(scope="module")
def calculator_tab(server, browser):
    """One visit to the calculator for the tests below. Only test_calculator_by_keyboard changes
    what the page shows; the others call the page's pure functions or read its preset list."""
    tab = PageVisit(browser)
    load(tab, f"{server}/{CALCULATOR}.html")
    tab.page.wait_for_function("() => window.MHA && window.MHA.compute")
    yield tab
    tab.close()


def _compare(tab, cases):
    """Run every case in the page; return the differences from mha_kit."""
    sent = [[support.page_config(cfg), context, batch, dtype, str(memory)] for cfg, context, batch, dtype, memory in cases]
    shown = tab.page.evaluate(COMPUTE_ALL, sent)
    differences = []
    for case, page in zip(cases, shown):
        expected = support.calculator_answers(*case)
        if page != expected:
            keys = sorted(k for k in set(page) | set(expected) if page.get(k) != expected.get(k))
            differences.append(f"{case}: " + ", ".join(f"{k}: page {page.get(k)!r}, mha_kit {expected.get(k)!r}" for k in keys))
    return differences


def test_calculator_matches_mha_kit_on_every_preset_and_number_format(calculator_tab):
    """Every preset, every number format of DTYPE_BITS and a few bit counts: the page equals mha_kit."""
    formats = [*mk.DTYPE_BITS, 1, 3, 6, 12]
    cases = [(cfg, context, batch, dtype, memory)
             for cfg in mk.PRESETS.values() for dtype in formats
             for context, batch, memory in [(8192, 1, 80 * 10**9), (131072, 32, 141 * 10**9), (1, 1, 0), (4097, 3, 16 * 2**30 + 1)]]
    differences = _compare(calculator_tab, cases)
    assert not differences, f"{len(differences)} of {len(cases)} cases differ:\n" + "\n".join(differences[:20])


def test_calculator_matches_mha_kit_on_random_configurations(calculator_tab):
    """A few thousand random shapes, contexts, batches, formats and memories, MLA among them."""
    cases = support.random_cases(RANDOM_CASES, seed=20261201)
    differences = _compare(calculator_tab, cases)
    assert not differences, f"{len(differences)} of {len(cases)} cases differ:\n" + "\n".join(differences[:20])


def test_calculator_presets_are_mha_kits(calculator_tab):
    """The preset list on the page is mha_kit.PRESETS, in order."""
    names = calculator_tab.page.eval_on_selector_all("[data-name=preset] option", "options => options.map(o => o.value)")
    assert names == [*mk.PRESETS, ""]  # "" is "your own"


def _results(page):
    return page.eval_on_selector_all(".mha-results dd strong", "nodes => nodes.map(n => n.textContent)")


def test_calculator_by_keyboard(calculator_tab):
    """Tab to the preset, pick another with the arrow keys, type a context: the results follow."""
    tab = calculator_tab
    page = tab.page
    preset = page.locator("[data-name=preset]")
    preset.focus()
    names = list(mk.PRESETS)
    start = names.index(preset.input_value())
    page.keyboard.press("ArrowDown")
    chosen = mk.PRESETS[names[start + 1]]
    assert preset.input_value() == chosen.name
    context = page.locator("[data-name=context]")
    context.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("32768")
    page.keyboard.press("Tab")
    shown = _results(page)
    assert shown[1] == mk.format_bytes(mk.kv_cache_bytes_per_token(chosen, "bf16"))
    assert shown[2] == mk.format_bytes(mk.kv_cache_bytes(chosen, 32768, 1, "bf16"))
    # a shape mha_kit refuses gets mha_kit's rule, not numbers
    kind = page.locator("[data-name=kind]")
    if kind.input_value() == "kv":
        page.locator("[data-name=kv_heads]").fill("7")
        assert "must be divisible by num_kv_heads (7)" in page.locator(".mha-error").inner_text()
    assert not tab.problems, "\n".join(tab.problems)


def test_calculator_mla_preset_and_own_shape(server, visit):
    """An MLA preset shows the latent's fields and numbers; editing a field leaves the preset."""
    tab = visit()
    load(tab, f"{server}/{CALCULATOR}.html")
    page = tab.page
    page.select_option("[data-name=preset]", "deepseek-v2")
    cfg = mk.PRESETS["deepseek-v2"]
    assert page.locator("[data-name=latent]").is_visible() and not page.locator("[data-name=kv_heads]").is_visible()
    assert _results(page)[1] == mk.format_bytes(mk.kv_cache_bytes_per_token(cfg, "bf16"))
    page.locator("[data-name=mla_heads]").fill("64")
    assert page.locator("[data-name=preset]").input_value() == ""  # "your own"
    fewer_heads = mk.arithmetic_intensity(dataclasses.replace(cfg, num_heads=64), 8192, "bf16")
    assert _results(page)[5] == f"{float(f'{fewer_heads:.4g}'):g} FLOPs per byte"
    assert not tab.problems, "\n".join(tab.problems)


# --- the drills --------------------------------------------------------------------------------

SEEDS_PER_KIND = 150
GENERATE_ALL = """
(jobs) => jobs.map(([kind, seed]) => {
  const q = window.MHA.drills.generate(kind, seed);
  return Object.assign({}, q, {expected: typeof q.expected === "bigint" ? q.expected.toString() : q.expected});
})
"""
CHECK_ALL = "(jobs) => jobs.map(([q, text]) => window.MHA.drills.check(q, text))"


@pytest.fixture(scope="module")
def drill_questions(server, browser):
    """One visit to the drills page for the tests below: questions made and checked by the page's
    pure functions, then the keyboard drill (which reloads the page) and the flashcards, whose
    widgets neither test's steps touch for the other."""
    tab = PageVisit(browser)
    load(tab, f"{server}/{DRILLS}.html")
    tab.page.wait_for_function("() => window.MHA && window.MHA.drills")
    kinds = tab.page.evaluate("() => window.MHA.drills.kinds")
    questions = tab.page.evaluate(GENERATE_ALL, [[kind, seed] for kind in kinds for seed in range(SEEDS_PER_KIND)])
    yield tab, kinds, questions
    tab.close()


def _expected_in_python(question):
    answer = question["expected"]
    if question["answer"] == "shape":
        return tuple(int(x) for x in answer)
    return answer if question["answer"] == "float" else int(answer)


def test_drill_answers_are_mha_kits(drill_questions):
    """Every kind of drill, on many random configurations: the page's answer is mha_kit's."""
    _, kinds, questions = drill_questions
    assert set(kinds) >= {"shape", "params", "sequence_macs", "decode_macs", "scores", "cache_per_token",
                          "cache_batch", "max_context", "intensity", "mla_cache"}
    wrong = [f"{q['kind']} seed {q['seed']}: page {_expected_in_python(q)!r}, mha_kit {support.drill_answer(q)!r}"
             for q in questions if _expected_in_python(q) != support.drill_answer(q)]
    assert not wrong, f"{len(wrong)} of {len(questions)} drills differ:\n" + "\n".join(wrong[:20])
    assert all(q["tag"] in ("E", "M", "H") for q in questions)


def test_drill_messages_are_the_exercises_messages(drill_questions):
    """Right and wrong answers typed in the box get exactly what mha_course.expect says."""
    tab, _, questions = drill_questions
    rng = random.Random(7)
    jobs, expected = [], []
    for question in questions[:: max(1, SEEDS_PER_KIND // 20)]:
        for got in support.wrong_answers(question, support.drill_answer(question), rng):
            jobs.append([question, support.typed(got)])
            expected.append(support.exercise_message(question, got, practice_pages.DRILL_HINTS))
    shown = tab.page.evaluate(CHECK_ALL, jobs)
    differences = [f"{q['kind']} {text!r}:\n    page     {r['message']!r}\n    exercise {e!r}"
                   for (q, text), r, e in zip(jobs, shown, expected) if r["message"] != e or r["correct"] != (e is None)]
    assert not differences, f"{len(differences)} of {len(jobs)} messages differ:\n" + "\n".join(differences[:15])
    assert any(e and "did you forget K or V?" in e for e in expected)  # the hints are exercised


def test_drills_by_keyboard_with_progress_kept(drill_questions):
    """Answer with the keyboard, open the working, and find the progress again after a reload."""
    tab, _, _ = drill_questions
    page = tab.page
    page.select_option("[data-name=topic]", "scores")
    answer = page.locator("#mha-drill-answer")
    answer.focus()
    page.keyboard.type("12345")
    page.keyboard.press("Enter")
    feedback = page.locator(".mha-feedback").inner_text()
    assert feedback.startswith("scores (n="), feedback
    summary = page.locator(".mha-working summary")
    summary.focus()
    page.keyboard.press("Enter")
    assert page.locator(".mha-working").get_attribute("open") is not None
    assert "h·n²" in page.locator(".mha-working-body").inner_text()
    progress = json.loads(page.evaluate("() => localStorage.getItem('mha-drills-progress')"))
    assert progress == {"scores": {"tried": 1, "right": 0}}
    page.reload()
    assert "0 of 1 questions" in page.locator(".mha-progress").first.inner_text()
    assert not tab.problems, "\n".join(tab.problems)


def test_flashcards_from_the_chapters(drill_questions, site):
    """The follow-up chains are flashcards; with none, the page says so instead of breaking."""
    cards = json.loads((site.html / "_static" / "mha-flashcards.json").read_text(encoding="utf-8"))
    tab, _, _ = drill_questions
    widget = tab.page.locator("[data-mha-widget=flashcards]")
    if not cards:
        assert "No flashcards yet" in widget.inner_text()
    else:
        assert cards[0]["question_text"][:30] in widget.inner_text()
        assert widget.inner_text().count(f"[{cards[0]['tag']}]") == 1, "the difficulty tag shows more than once"
        reveal = widget.get_by_role("button", name="Show the answer")
        reveal.focus()
        tab.page.keyboard.press("Enter")
        assert widget.locator(".mha-card-answer").is_visible()
    assert not tab.problems, "\n".join(tab.problems)


FIXTURE_CARDS = [
    {"id": f"book/kv_cache_calculator#{i}", "doc": "book/kv_cache_calculator", "page": "6. KV-cache calculator",
     "url": "kv_cache_calculator.html", "tag": tag, "question_text": question, "question_html": question,
     "answer_html": '<p><strong>Strong answer.</strong> The cache is '
                    '<span class="math notranslate nohighlight">\\(2 \\cdot h_{kv} \\cdot d_h\\)</span> per token and layer.</p>'}
    for i, (tag, question) in enumerate([("E", "Q1. Does the cache depend on h?"), ("M", "Q2. Do 16 heads double it?")], start=1)
]


def test_flashcards_by_keyboard(server, visit):
    """With cards (served here in place of the build's, as chapters have no chain yet): show one,
    reveal its answer from the keyboard with its math typeset, mark it known, move on."""
    tab = visit()
    tab.page.route("**/_static/mha-flashcards.js", lambda route: route.fulfill(
        content_type="text/javascript", body="window.MHA_FLASHCARDS = " + json.dumps(FIXTURE_CARDS) + ";"))
    load(tab, f"{server}/{DRILLS}.html")
    page = tab.page
    widget = page.locator("[data-mha-widget=flashcards]")
    assert "[E] Q1. Does the cache depend on h?" in widget.inner_text()
    reveal = widget.locator(".mha-reveal")
    assert reveal.inner_text() == "Show the answer" and not widget.locator(".mha-card-answer").is_visible()
    reveal.focus()
    page.keyboard.press("Enter")
    answer = widget.locator(".mha-card-answer")
    assert answer.is_visible() and reveal.get_attribute("aria-expanded") == "true"
    answer.locator("mjx-container").first.wait_for()  # MathJax typeset the answer's formula
    widget.get_by_role("button", name="I knew it").click()
    assert "[M] Q2." in widget.inner_text() and "Card 2 of 2; you knew 1." in widget.inner_text()
    stored = json.loads(page.evaluate("() => localStorage.getItem('mha-flashcards-progress')"))
    assert stored == {"book/kv_cache_calculator#1": "known"}
    assert not tab.problems, "\n".join(tab.problems)


PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}


@pytest.mark.parametrize("docname", [CALCULATOR, DRILLS])
def test_practice_pages_fit_a_phone(server, visit, docname):
    """On a phone-sized screen nothing scrolls sideways and every control is reachable."""
    tab = visit(**PHONE)
    load(tab, f"{server}/{docname}.html")
    page = tab.page
    widget = page.locator("[data-mha-widget]").first
    box = widget.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390 + 0.5, f"{docname}: the widget is {box}"
    too_wide = page.evaluate("""() => [...document.querySelectorAll('[data-mha-widget] input, [data-mha-widget] select, [data-mha-widget] button')]
        .filter(e => e.offsetParent && e.getBoundingClientRect().right > window.innerWidth + 0.5).map(e => e.outerHTML.slice(0, 80))""")
    assert not too_wide, f"{docname}: controls past the screen's edge: {too_wide}"
    assert not tab.problems, "\n".join(tab.problems)


@pytest.mark.parametrize("docname", [CALCULATOR, DRILLS])
def test_practice_pages_work_from_disk(browser, site, docname):
    """Opened as a file (no server at all), the widgets still work."""
    tab = PageVisit(browser)
    try:
        tab.page.goto(site.page(docname).as_uri(), wait_until="load")
        rendered = tab.page.locator("[data-mha-widget] .mha-noscript")
        assert rendered.count() == 0, f"{docname}: the widget did not start from file://"
        assert not tab.problems, "\n".join(tab.problems)
    finally:
        tab.close()


# --- accessibility, figures, search ------------------------------------------------------------

def test_pages_pass_the_accessibility_checker(page_reports):
    """axe-core in Chromium, on every page: no serious or critical violation (figures' alt text
    is the next test's)."""
    found = [f"{docname}: not checked ({report.error})" for docname, report in page_reports.items() if report.error]
    missing = [docname for docname in _axe_pages() if docname not in page_reports]
    found += [f"{docname}: not built, so not checked" for docname in missing]
    for docname, report in page_reports.items():
        for violation in report.violations:
            targets = [", ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{docname}: {violation['id']} ({violation['impact']}) {violation['help']}: {targets}")
    assert not found, "accessibility violations:\n  " + "\n  ".join(found)


def test_every_figure_has_alt_text(site):
    """Every image on every page says what it shows: alt text that is not empty and not a file name."""
    missing = {}
    for docname in SITE_DOCNAMES:
        page = site.page(docname)
        if not page.exists():
            continue
        for tag in re.findall(r"<img\b[^>]*>", page.read_text(encoding="utf-8")):
            alt = re.search(r'\balt="([^"]*)"', tag)
            text = alt.group(1).strip() if alt else ""
            if not text or re.search(r"\.(png|jpe?g|svg|gif)$", text, re.IGNORECASE):
                missing[docname] = missing.get(docname, 0) + 1
    assert not missing, (
        "figures without alt text (set mystnb.image.alt in the cell's metadata, see the chain format):\n  "
        + "\n  ".join(f"{docname}: {count} figure(s)" for docname, count in sorted(missing.items()))
    )


TEX = re.compile(r"\\\(|\\\[|\\[a-zA-Z]+\{|[a-z]_\{")


def test_search_results_show_readable_math(page_reports):
    """A search hit on a title or a passage with math shows text, not TeX source."""
    report = _seen(page_reports, SEARCH)
    text = report.seen["text"]
    assert "√d_h" in text, text[:2000]
    assert not TEX.findall(text), f"TeX in the search results: {TEX.findall(text)[:10]}\n{text[:2000]}"
    assert not report.problems, "\n".join(report.problems)


def test_search_works_from_disk(browser, site):
    """Opened from disk, search still lists pages with readable summaries, and nothing fails."""
    tab = PageVisit(browser)
    try:
        tab.page.goto((site.html / "search.html").as_uri() + f"?q={SEARCH_QUERY}", wait_until="load")
        text = _search_results(tab.page)["text"]
        assert "√d_h" in text and not TEX.findall(text), text[:2000]
        assert not tab.problems, "\n".join(tab.problems)
    finally:
        tab.close()


def test_search_index_titles_have_no_tex(site):
    index = (site.html / "searchindex.js").read_text(encoding="utf-8")
    titles = json.loads(index[len("Search.setIndex("):-1])["alltitles"]
    assert not [title for title in titles if "\\" in title]


# --- the learner edition and its links ---------------------------------------------------------


def test_learner_edition_leaks_no_answer_and_no_hidden_test(site):
    """No line of a solution region or a hidden test, in any file of the built site."""
    secrets = support.secret_lines()
    assert len(secrets) > 50, "too few solution and hidden-test lines found to make the test mean anything"
    found = support.leaks(site.html, secrets)
    assert not found, "the learner edition gives away:\n" + "\n".join(
        f"  {path}: {len(lines)} line(s), e.g. {lines[0]!r}" for path, lines in found.items())


def test_learner_edition_has_no_instructor_guide(site):
    assert not site.page("book/instructor_guide").exists()
    assert not (site.html / "_sources" / "book" / "instructor_guide.ipynb").exists()


PLACEHOLDERS = ("mha-kit/mha-book", "executablebooks/jupyter-book", "mybinder.org")


def test_default_build_has_no_repository_buttons_or_placeholder(site):
    """Without MHA_REPOSITORY_URL no page has a repository, issue or launch button or link."""
    found = []
    for path in sorted(site.html.rglob("*")):
        if path.suffix not in (".html", ".js", ".json", ".ipynb", ".txt") or (
                "_static" in path.parts and not path.name.startswith("mha-")):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(site.html)}: {p}" for p in PLACEHOLDERS if p in text]
        if path.suffix == ".html" and re.search(r"repository-button|issues-button|launch-button|btn-launch", text):
            found.append(f"{path.relative_to(site.html)}: a repository or launch button")
    assert not found, "\n".join(found[:20])
