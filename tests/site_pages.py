"""The page reports: every page of the built site loaded once in Chromium, for the rendering test, axe-core's
accessibility checker and the page's probe.

The pages are shared out between two test modules (tests/test_site_pages_a.py and _b.py, each with its
``PAGE_SHARE``), so that pytest-xdist runs them on two workers at once: in one module they were 145 CPU-seconds
in a row on one worker, the run's long pole once the browser edition ran beside it (2026-12-06). Each module
imports the fixtures and tests it runs from here; the build, the server and the browser are
tests/site_browser.py's.
"""
# ruff: noqa: F811 (a test names the fixtures it uses)
import dataclasses
from dataclasses import dataclass

import pytest
from site_browser import (  # noqa: F401 (the fixtures: pytest finds them among a module's names)
    FIND_UNRENDERED_MATH,
    SITE_DOCNAMES,
    PageTimeout,
    PageVisit,
    load,
    settle,
)
import re

ANIMATED_CHAPTER = "book/step_through"

AXE_IMPACTS = ("serious", "critical")
# axe-core's rules whose every outcome is minor or moderate (the rule's own impact, or else every one of its
# checks'): their violations are never reported (AXE_IMPACTS), so the page reports leave them out. Four in ten of
# its rules ('region' and the landmark rules among them) and 40 % of its time on a chapter (measured 2026-12-06).
# test_rules_left_out_report_nothing_serious shows on a page of violations that the result is the same.
LOW_IMPACT_RULES = """
() => {
  const low = new Set(['minor', 'moderate']);
  const checks = axe._audit.checks;
  return axe._audit.rules.filter((rule) => {
    const impacts = rule.impact ? [rule.impact] : [...rule.any, ...rule.all, ...rule.none].map((c) => {
      const check = checks[typeof c === 'string' ? c : c.id];
      return check && check.metadata ? check.metadata.impact : undefined;
    });
    return impacts.length > 0 && impacts.every((impact) => low.has(impact));
  }).map((rule) => rule.id);
}
"""
# search.html is checked with a query's results on it, which the search tests then read.
SEARCH = "search"
SEARCH_QUERY = "scores"


def _axe_pages():
    return [*SITE_DOCNAMES, SEARCH, "lite/index"]  # lite/index: the browser edition's landing page


def share_pages(share):
    """The pages a module of ``share = (k, n)`` reports on: every n-th of :func:`_axe_pages` from the k-th, the pages
    with a probe (PROBES) in share 0, whose module holds their tests."""
    k, n = share
    probed = [docname for docname in _axe_pages() if docname in PROBES]
    others = [docname for docname in _axe_pages() if docname not in PROBES]
    return (probed if k == 0 else []) + others[k::n]


def pytest_generate_tests(metafunc):
    """A page module's ``docname`` tests run on its share of the pages (its ``PAGE_SHARE``)."""
    if "docname" in metafunc.fixturenames and hasattr(metafunc.module, "PAGE_SHARE"):
        metafunc.parametrize("docname", [d for d in share_pages(metafunc.module.PAGE_SHARE) if d in SITE_DOCNAMES])


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
    timed_out: bool = False  # the error is a wait that ran past PAGE_TIMEOUT_MS
    seen: dict = dataclasses.field(default_factory=dict)  # what the page's probe saw (PROBES)
    kinds: set = dataclasses.field(default_factory=set)  # its elements' tags, classes, inline styles
    checked: set = dataclasses.field(default_factory=set)  # the kinds of the elements the colour rules checked


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


# The kinds of element a page shows once rendered: tags, classes and inline styles, MathJax's own
# elements left out (math takes the colour of the text around it). An element gets the attribute
# data-mha-colours, the context axe-core's colour rules are then given, when it shows a kind that neither
# ``seen`` (the kinds checked on the pages before) nor an element checked before it on this page showed
# (every element, when ``seen`` is null); everything inside it is checked with it, except an element
# whose surroundings (its kinds and those of each element around it, up to the body) repeat those of one
# checked before it on this page: that one gets data-mha-colours-skip, and axe-core leaves it and what is
# inside it out, unless something inside shows a kind still unchecked, which is marked again (axe-core
# checks an element when the innermost of its marks is an include). A bibliography of 1,250 entries
# of one new kind was 10 of the page reports' 27 CPU-seconds of colour rules while every entry was
# checked (until 2026-12-06, third session). Returns [the kinds shown, the kinds of the elements those
# rules check: those whose innermost mark is data-mha-colours].
ELEMENT_KINDS = """
(seen) => {
  const old = seen === null ? null : new Set(seen);
  const kinds = (el) => {
    const found = [el.tagName.toLowerCase(), ...[...el.classList].map((name) => '.' + name)];
    if (el.getAttribute('style')) found.push('@' + el.getAttribute('style'));
    return found;
  };
  const shown = [...document.body.querySelectorAll('*')].filter(
    (el) => !el.tagName.toLowerCase().startsWith('mjx-') && !el.closest('mjx-container'));
  const MARKS = '[data-mha-colours], [data-mha-colours-skip]';
  const innermostMark = (el) => el.closest(MARKS);
  const ids = new Map(), surroundings = new Map();
  const surroundingsOf = (el) => {  // one number per distinct chain of kinds from the body down to el
    if (!surroundings.has(el)) {
      const parent = el.parentElement;
      const key = kinds(el).join(' ') + '<' + (parent && parent !== document.body ? surroundingsOf(parent) : '');
      if (!ids.has(key)) ids.set(key, ids.size);
      surroundings.set(el, ids.get(key));
    }
    return surroundings.get(el);
  };
  const checkedHere = new Set(), seenAround = new Set();
  for (const el of shown) {
    if (old === null) {
      el.setAttribute('data-mha-colours', '');
      continue;
    }
    const mark = el.parentElement ? innermostMark(el.parentElement) : null;
    if (mark && mark.hasAttribute('data-mha-colours')) {  // inside a checked element
      const around = surroundingsOf(el);
      if (seenAround.has(around)) {
        el.setAttribute('data-mha-colours-skip', '');
      } else {
        seenAround.add(around);
        kinds(el).forEach((kind) => checkedHere.add(kind));
      }
    } else if (kinds(el).some((kind) => !old.has(kind) && !checkedHere.has(kind))) {
      el.setAttribute('data-mha-colours', '');
      seenAround.add(surroundingsOf(el));
      kinds(el).forEach((kind) => checkedHere.add(kind));
    }
  }
  const all = new Set(), checked = new Set();
  for (const el of shown) {
    kinds(el).forEach((kind) => all.add(kind));
    const mark = innermostMark(el);
    if (mark && mark.hasAttribute('data-mha-colours')) kinds(el).forEach((kind) => checked.add(kind));
  }
  return [[...all], [...checked]];
}
"""
# A code block's highlighted tokens (Pygments: a <span> with a class and only text in it) carry nothing that
# axe-core's rules examine but their colours. Where the colour rules check none of a block's tokens (ELEMENT_KINDS'
# marks), the tokens are replaced by their text before axe-core runs: a block holding anything else (a link, an
# element with an id, a style, a role) stays as it is. Both runs of axe-core cost time with every element of the
# page, whether it is checked or not: the rules visit each one, and the colour rules lay out a grid of every element
# before they compare one colour. Tokens were half the elements of the longest chapters (16,844 of 33,823 on
# weight_quantization); the page reports' axe-core time on one module's 28 pages went from 47 to 32 CPU-seconds with
# the same violations found (measured on 2 cores, 2026-12-06, fourth session). On a page of planted violations,
# test_code_tokens_are_left_out_only_where_nothing_but_their_colours_is_checked shows that what is found is the same.
# Returns the number of tokens replaced.
FLATTEN_CODE_TOKENS = """
() => {
  const MARKS = '[data-mha-colours], [data-mha-colours-skip]';
  const coloursChecked = (el) => {
    const mark = el.closest(MARKS);
    return mark !== null && mark.hasAttribute('data-mha-colours');
  };
  const plainToken = (el) => el.tagName === 'SPAN' && el.children.length === 0
    && [...el.attributes].every((attribute) => attribute.name === 'class');
  let replaced = 0;
  for (const pre of document.querySelectorAll('div.highlight pre')) {
    const tokens = [...pre.querySelectorAll('*')];
    if (tokens.length === 0 || coloursChecked(pre) || tokens.some(coloursChecked) || !tokens.every(plainToken)) continue;
    pre.textContent = pre.textContent;
    replaced += tokens.length;
  }
  return replaced;
}
"""
# The context axe-core's colour rules run in (ELEMENT_KINDS' marks).
COLOUR_CONTEXT = {"include": [["[data-mha-colours]"]], "exclude": [["[data-mha-colours-skip]"]]}
# axe-core's rules that compare colours: they run on the marked elements only (ELEMENT_KINDS).
COLOUR_RULES = ("color-contrast", "link-in-text-block")


class Reader:
    """One reader's tab, going from page to page (page_reports).

    Going from page to page in one tab, as a reader follows the links, rather than a new tab for
    each page: Chromium keeps the one renderer process and what it has compiled, and the 34 page
    reports cost 64-70 CPU-seconds instead of 85-100 (measured on 2 cores, 2026-12-02). A page
    whose load runs out of time is tried once more in a new tab (the stalled one is closed): in a
    full test run on 2 cores, one chapter's load once waited past PAGE_TIMEOUT_MS for Playwright's
    "networkidle", a page that loads in a second on its own. A page that times out twice fails.
    """

    def __init__(self, context):
        self.context, self.tab = context, PageVisit(context)

    def report(self, axe, url, probes=(None, None), contrast_seen=None):
        """:func:`_visit` of ``url`` in this tab."""
        report = _visit(self.tab, axe, url, probes, contrast_seen)
        if report.timed_out:
            self._new_tab()
            report = _visit(self.tab, axe, url, probes, contrast_seen)
        self._leave()
        return report

    def _leave(self):
        """Let the requests the page's checks started (axe-core fetches its stylesheets, a probe its
        images) finish here, so that their events never land in the next page's record; a tab whose
        requests do not finish is replaced."""
        try:
            settle(self.tab, quiet_s=0.2)
        except PageTimeout:
            self._new_tab()

    def _new_tab(self):
        self.tab.close()
        self.tab = PageVisit(self.context)

    def close(self):
        self.tab.close()


def _axe_violations(page, axe, colours, flatten=True):
    """axe-core's violations on ``page`` once ELEMENT_KINDS has marked it: every rule but the colour rules and those
    left out (image-alt, LOW_IMPACT_RULES) on the whole page, then the colour rules on the marked elements when
    ``colours`` (some element is marked), the code blocks with nothing else to check turned to text first
    (FLATTEN_CODE_TOKENS; ``flatten=False`` leaves them, as a test's reference)."""
    if flatten:
        page.evaluate(FLATTEN_CODE_TOKENS)
    page.evaluate(axe.axe_script)
    off = ["image-alt", *COLOUR_RULES, *page.evaluate(LOW_IMPACT_RULES)]
    violations = page.evaluate("([options]) => axe.run(document, options)", [
        {"resultTypes": ["violations"], "rules": {rule: {"enabled": False} for rule in off}}])["violations"]
    if colours:
        options = {"resultTypes": ["violations"], "runOnly": {"type": "rule", "values": list(COLOUR_RULES)}}
        violations += page.evaluate("([context, options]) => axe.run(context, options)", [COLOUR_CONTEXT, options])["violations"]
    return violations


def _visit(tab, axe, url, probes=(None, None), contrast_seen=None):
    """Load ``url`` in ``tab`` (a :class:`PageVisit`): its problems, its probes and axe-core's violations.

    axe-core's colour rules (:data:`COLOUR_RULES`: two thirds of its time on a page) check the
    elements that show a kind of element (tag, class or inline style) no page checked before
    showed, and everything inside them: an element's colours come from the stylesheets its kind
    and those of the elements around it select, which every page shares. ``contrast_seen`` holds
    the kinds checked so far (``None``: check every element of every page).
    """
    tab.reset()
    report = PageReport()
    before, after = probes
    try:
        report.mathjax = load(tab, url)
        if before:
            _probe(report, before, tab.page)
        # The page's problems are those before axe-core runs (its stylesheet fetches are its own),
        # and those of the probe after it.
        problems = tab.problems + tab.page.evaluate(FIND_UNRENDERED_MATH)
        seen = None if contrast_seen is None else sorted(contrast_seen)
        report.kinds, report.checked = map(set, tab.page.evaluate(ELEMENT_KINDS, seen))
        violations = _axe_violations(tab.page, axe, colours=bool(report.checked))
        if contrast_seen is not None:
            contrast_seen |= report.checked
        report.violations = [v for v in violations if v["impact"] in AXE_IMPACTS]
        if after:
            seen_by_axe = len(tab.problems)
            _probe(report, after, tab.page)
            problems += tab.problems[seen_by_axe:]
        report.problems = problems
    except Exception as error:  # a page that fails to load fails its own tests, not the others
        report.error = f"{type(error).__name__}: {error}"
        report.timed_out = isinstance(error, TimeoutError) or type(error).__name__ == "TimeoutError"  # Playwright's
    return report


@pytest.fixture(scope="module")
def page_reports(request, server, browser, axe, site):
    """The module's share of the pages (its ``PAGE_SHARE``: :func:`share_pages`) of the site and search.html
    (with a query's results), each loaded once for the rendering test, the accessibility checker and the page's
    probe (PROBES): a page load with MathJax costs as much as the check."""
    contrast_seen = set()
    # One context for all the pages, as one reader's browser: a context of its own for each page
    # cost about 1.5 CPU-seconds more per page (measured on 2 cores); one tab too (Reader).
    context = browser.new_context()
    reader = Reader(context)
    yield {docname: reader.report(axe, _page_url(server, docname), PROBES.get(docname, (None, None)), contrast_seen)
           for docname in share_pages(request.module.PAGE_SHARE) if site.page(docname).exists()}
    reader.close()
    context.close()


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



def test_pages_pass_the_accessibility_checker(request, page_reports):
    """axe-core in Chromium, on every page: no serious or critical violation (figures' alt text
    is the next test's)."""
    found = [f"{docname}: not checked ({report.error})" for docname, report in page_reports.items() if report.error]
    missing = [docname for docname in share_pages(request.module.PAGE_SHARE) if docname not in page_reports]
    found += [f"{docname}: not built, so not checked" for docname in missing]
    for docname, report in page_reports.items():
        for violation in report.violations:
            targets = [", ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{docname}: {violation['id']} ({violation['impact']}) {violation['help']}: {targets}")
    assert not found, "accessibility violations:\n  " + "\n  ".join(found)


# A page with violations of every impact: a button with no name and an aria-hidden link that takes focus
# (critical, serious), low-contrast text (serious), no main landmark, no h1, a skipped heading level,
# text outside any landmark (moderate), an empty table header (minor).
VIOLATIONS_PAGE = """<!doctype html><html lang="en"><head><title>t</title></head><body>
<h3>Skipped levels</h3><p style="color:#aaa;background:#fff">faint text</p><button></button>
<div aria-hidden="true"><a href="#x">hidden but focusable</a></div>
<table><tr><th></th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></body></html>"""


def test_rules_left_out_report_nothing_serious(browser, axe):
    """Leaving out LOW_IMPACT_RULES changes no serious or critical violation: on a page with violations of
    every impact, axe-core with them and without them reports the same serious and critical ones."""
    tab = PageVisit(browser)
    try:
        tab.page.set_content(VIOLATIONS_PAGE)
        tab.page.evaluate(axe.axe_script)
        off = tab.page.evaluate(LOW_IMPACT_RULES)
        assert {"region", "heading-order", "landmark-one-main"} <= set(off), off
        found = {}
        for name, rules in (("all", {}), ("without", {rule: {"enabled": False} for rule in off})):
            result = tab.page.evaluate("([options]) => axe.run(document, options)",
                                       [{"resultTypes": ["violations"], "rules": rules}])
            found[name] = {(v["id"], v["impact"]) for v in result["violations"]}
        serious = {v for v in found["all"] if v[1] in AXE_IMPACTS}
        assert {"button-name", "color-contrast"} <= {rule for rule, _ in serious}, found["all"]
        assert any(impact not in AXE_IMPACTS for _, impact in found["all"]), found["all"]  # the page has low ones too
        assert {v for v in found["without"] if v[1] in AXE_IMPACTS} == serious
        assert not {rule for rule, _ in found["without"]} & set(off)
    finally:
        tab.close()


# A list of entries of one kind, the second with faint text of a kind no entry before it shows.
REPEATS_PAGE = """<!doctype html><html lang="en"><head><title>t</title></head><body><main><h1>Entries</h1>
<ol class="entries"><li class="entry"><p>first entry</p></li>
<li class="entry"><p>second entry, <span class="faint" style="color:#bbb;background:#fff">faint</span></p></li>
<li class="entry"><p>third entry</p></li></ol></main></body></html>"""


def test_colour_rules_skip_repeats_but_not_a_new_kind_inside_them(browser, axe):
    """ELEMENT_KINDS leaves out the entries that repeat the first one's surroundings, marks again what inside them
    shows a kind still unchecked, and axe-core's colour rules in COLOUR_CONTEXT find the faint text there."""
    tab = PageVisit(browser)
    try:
        tab.page.set_content(REPEATS_PAGE)
        shown, checked = map(set, tab.page.evaluate(ELEMENT_KINDS, []))
        assert checked == shown, sorted(shown - checked)
        skipped = tab.page.eval_on_selector_all("[data-mha-colours-skip]", "(els) => els.map((el) => el.textContent)")
        assert skipped == ["second entry, faint", "third entry"]
        tab.page.evaluate(axe.axe_script)
        options = {"resultTypes": ["violations"], "runOnly": {"type": "rule", "values": list(COLOUR_RULES)}}
        found = tab.page.evaluate("([context, options]) => axe.run(context, options)", [COLOUR_CONTEXT, options])
        targets = [node["target"] for v in found["violations"] for node in v["nodes"]]
        assert targets == [["span"]], found["violations"]
    finally:
        tab.close()


def test_colour_contrast_is_checked_on_every_kind_of_element(page_reports):
    """The elements axe-core's colour rules checked show, together, every kind of element any of the module's
    pages shows (each page module checks the kinds its own pages show)."""
    shown = set().union(*(report.kinds for report in page_reports.values()))
    checked = set().union(*(report.checked for report in page_reports.values()))
    assert shown and checked == shown, sorted(shown - checked)[:20]


TEX = re.compile(r"\\\(|\\\[|\\[a-zA-Z]+\{|[a-z]_\{")


def test_search_results_show_readable_math(page_reports):
    """A search hit on a title or a passage with math shows text, not TeX source."""
    report = _seen(page_reports, SEARCH)
    text = report.seen["text"]
    assert "√d_h" in text, text[:2000]
    assert not TEX.findall(text), f"TeX in the search results: {TEX.findall(text)[:10]}\n{text[:2000]}"
    assert not report.problems, "\n".join(report.problems)


# Code blocks as the site's are (Pygments' <div class="highlight"><pre> of token spans): one of plain tokens, one
# holding an empty link (link-name, serious), one with a token hidden from assistive technology yet focusable
# (aria-hidden-focus, serious), one whose tokens are of a kind no page before showed, in a faint colour (color-contrast,
# serious).
CODE_PAGE = """<!doctype html><html lang="en"><head><title>t</title><style>.ghost { color: #ccc; }</style></head><body>
<main><h1>Code</h1>
<div class="highlight"><pre><span class="k">def</span> <span class="nf">f</span><span class="p">():</span></pre></div>
<div class="highlight"><pre><span class="n">x</span> <a href="#a"><span class="n"></span></a></pre></div>
<div class="highlight"><pre><span class="n" aria-hidden="true" tabindex="0">y</span></pre></div>
<div class="highlight"><pre><span class="ghost">faint</span> <span class="n">z</span></pre></div>
</main></body></html>"""


def test_code_tokens_are_left_out_only_where_nothing_but_their_colours_is_checked(browser, axe):
    """FLATTEN_CODE_TOKENS turns to text the one block of plain tokens whose colours are not checked (its text
    unchanged), and keeps the blocks with a link, an attribute or a token the colour rules check: axe-core finds the
    same serious violations on the page with it and without it, the planted ones."""
    tab = PageVisit(browser)
    try:
        tab.page.set_content(CODE_PAGE)
        shown, _ = tab.page.evaluate(ELEMENT_KINDS, None)
        found = {}
        for flatten in (False, True):
            tab.page.set_content(CODE_PAGE)
            texts = tab.page.eval_on_selector_all("pre", "(pres) => pres.map((pre) => pre.textContent)")
            _, checked = tab.page.evaluate(ELEMENT_KINDS, sorted(set(shown) - {".ghost"}))
            assert ".ghost" in checked
            if flatten:
                assert tab.page.evaluate(FLATTEN_CODE_TOKENS) == 3
                assert tab.page.eval_on_selector_all("pre", "(pres) => pres.map((pre) => pre.textContent)") == texts
                assert tab.page.eval_on_selector_all("pre", "(pres) => pres.map((pre) => pre.children.length)") == [0, 2, 1, 2]
            violations = _axe_violations(tab.page, axe, colours=True, flatten=flatten)
            found[flatten] = sorted((v["id"], v["impact"], tuple(t for node in v["nodes"] for t in node["target"]))
                                    for v in violations)
        assert {rule for rule, _, _ in found[True]} == {"link-name", "aria-hidden-focus", "color-contrast"}, found[True]
        assert found[True] == found[False]
    finally:
        tab.close()

