"""The built site: a warning-free build, read in a real browser with no network.

The site's modules share one build of the whole book, made as `make learner-book` makes it
(website/build.py, the learner edition that is published) into the run's temporary folder by the
first module that asks (tests/site_browser.py); with MHA_BUILT_SITE=<folder> set (after `make
learner-book`), they read that build instead of making another. A chapter that nbval re-executes and
compares in the same run (`make test`, CI) is built from its stored outputs rather than executed a
second time (website/ext/stored_outputs.py); every other chapter executes. This module reads the
practice pages, search and the files; tests/test_site_pages_a.py and _b.py load every page for its
report (tests/site_pages.py), and tests/test_site_lite.py runs the browser edition in them. The calculator's and the drills' tests share one visit each.

The browser tests serve that folder on 127.0.0.1, open each chapter in headless Debian
Chromium with every request to another host failing at a dead proxy, and fail on console errors, script
errors, missing local files, math that MathJax did not typeset, and a step-through animation
that does not step. Then they drive the live calculator and the drills and compare every
number they show with mha_kit, run the axe-core accessibility checker on every page, and
check that the learner edition holds no answer, no hidden test and no placeholder link.
"""

# ruff: noqa: F811 (a test names the fixtures it uses, imported from site_browser)
import dataclasses
import json
import random
import re

import question_index_links as qil
import pytest
import site_support as support
from booktoc import source_of, toc_entries
from site_pages import SEARCH_QUERY, TEX, _search_results
from site_browser import (  # noqa: F401 (the fixtures: pytest finds them among the module's names)
    SITE_DOCNAMES,
    FIND_UNRENDERED_MATH,
    PAGE_TIMEOUT_MS,
    PageTimeout,
    PageVisit,
    browser,
    lite_summary,
    load,
    server,
    settle,
    site,
    visit,
)

import mha_kit as mk
from website.ext import practice_pages
from website.lite import site as lite_site



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


# --- the deployment planner ------------------------------------------------------------------

PLANNER = "book/deployment_planner"
PLAN_ALL = """
(cases) => cases.map(([model, gpu, opts, fleet]) => {
  try {
    const plan = window.MHA.plan(model, gpu, opts);
    return {plan, fleet: window.MHA.fleet(plan, ...fleet)};
  } catch (error) { return {error: error.message}; }
})
"""


@pytest.fixture(scope="module")
def planner_tab(server, browser):
    """One visit to the planner: the tests call its pure functions and read what it shows."""
    tab = PageVisit(browser)
    load(tab, f"{server}/{PLANNER}.html")
    tab.page.wait_for_function("() => window.MHA && window.MHA.plan")
    yield tab
    tab.close()


def _planner_expected(model, gpu, opts, fleet):
    try:
        plan = mk.plan_deployment(model, gpu, **opts)
    except ValueError as error:
        return {"error": str(error)}
    rate, output_tokens, price = fleet
    estimate = mk.fleet_estimate(plan, rate=rate, output_tokens=output_tokens, price_per_gpu_hour=price)
    return {"plan": dataclasses.asdict(plan), "fleet": dataclasses.asdict(estimate)}


def _same(page, expected, path=""):
    """Differences between the page's plan and mha_kit's: integers, flags and names exactly, floats to 1e-12."""
    if isinstance(expected, dict):
        if not isinstance(page, dict) or set(page) != set(expected):
            return [f"{path}: keys {sorted(page) if isinstance(page, dict) else page!r} != {sorted(expected)}"]
        return [d for key in expected for d in _same(page[key], expected[key], f"{path}.{key}")]
    if isinstance(expected, float):
        return [] if page == pytest.approx(expected, rel=1e-12, abs=0) else [f"{path}: page {page!r}, mha_kit {expected!r}"]
    if isinstance(expected, bool):
        return [] if page is expected else [f"{path}: page {page!r}, mha_kit {expected!r}"]
    return [] if page == expected and not isinstance(page, bool) else [f"{path}: page {page!r}, mha_kit {expected!r}"]


def _compare_plans(tab, cases):
    shown = tab.page.evaluate(PLAN_ALL, [[m, g, o, list(f)] for m, g, o, f in cases])
    differences = []
    for case, page in zip(cases, shown):
        found = _same(page, _planner_expected(*case))
        if found:
            differences.append(f"{case}: " + "; ".join(found[:4]))
    return differences


def _planner_models():
    return [facts.name for facts in mk.MODEL_FACTS.values()
            if facts.total_params is not None or facts.param_layout is not None]


def test_planner_matches_mha_kit_on_every_model_and_gpu(planner_tab):
    """Every model the planner offers on every GPU record, a few shardings and formats: the page equals mha_kit."""
    settings = [dict(num_gpus=8, tp=8, context_len=8192, batch_size=32),
                dict(num_gpus=16, tp=16, context_len=131072, batch_size=4, kv_fmt="fp8_e4m3"),
                dict(num_gpus=8, tp=2, context_len=4096, batch_size=64, weight_fmt="fp8"),
                dict(num_gpus=1, tp=1, context_len=1, batch_size=1, weight_fmt="int4", kv_fmt="int8")]
    cases = [(model, gpu, opts, (10.0, 500, 2.0)) for model in _planner_models() for gpu in mk.GPUS for opts in settings]
    differences = _compare_plans(planner_tab, cases)
    assert not differences, f"{len(differences)} of {len(cases)} cases differ:\n" + "\n".join(differences[:20])


def test_planner_matches_mha_kit_on_random_settings(planner_tab):
    """Random shardings (invalid ones included: the page must give mha_kit's message), contexts, batches, formats."""
    rng = random.Random(20261205)
    formats = list(mk.DTYPE_BITS)
    cases = []
    for _ in range(600):
        tp = rng.choice([1, 2, 3, 4, 8, 16, 32, 64])
        opts = dict(num_gpus=tp * rng.choice([1, 2, 4]) + (1 if rng.random() < 0.05 else 0), tp=tp,
                    context_len=rng.choice([1, 7, 4096, 8192, 32768, rng.randint(1, 262144)]),
                    batch_size=rng.choice([1, 3, 32, 256, rng.randint(1, 2048)]),
                    weight_fmt=rng.choice(formats), kv_fmt=rng.choice(formats))
        fleet = (rng.choice([0.5, 10.0, rng.uniform(0.01, 500)]), rng.randint(1, 4000), rng.uniform(0.5, 10))
        cases.append((rng.choice(_planner_models()), rng.choice(list(mk.GPUS)), opts, fleet))
    differences = _compare_plans(planner_tab, cases)
    assert not differences, f"{len(differences)} of {len(cases)} cases differ:\n" + "\n".join(differences[:20])


def test_planner_shows_the_plan_and_its_chart(planner_tab):
    """The page's defaults (Llama 3 70B on 8 H100s) are shown as mha_kit computes them, with the chart."""
    page = planner_tab.page
    shown = page.eval_on_selector_all("#mha-deployment-planner .mha-results dd strong", "nodes => nodes.map(n => n.textContent)")
    plan = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=8192, batch_size=32)
    assert shown[0] == mk.format_bytes(plan.weight_bytes_per_gpu, "GB")
    assert shown[2] == f"{plan.max_sequences:,}"
    assert shown[3] == f"{1e3 * plan.decode_step_s:.2f} ms"
    assert page.locator("#mha-deployment-planner svg[role=img] title").count() == 1
    options = page.eval_on_selector_all("#mha-deployment-planner [data-name=model] option", "os => os.map(o => o.value)")
    assert options == _planner_models()


def test_planner_reports_a_rule_it_breaks(planner_tab):
    """Typing a tensor-parallel degree that does not divide the heads shows mha_kit's message, not a number."""
    page = planner_tab.page
    page.fill("#mha-deployment-planner [data-name=tp]", "3")
    page.fill("#mha-deployment-planner [data-name=num_gpus]", "3")
    message = page.text_content("#mha-deployment-planner .mha-error")
    with pytest.raises(ValueError) as error:
        mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=3, tp=3, context_len=8192, batch_size=32)
    assert message == str(error.value)
    page.fill("#mha-deployment-planner [data-name=tp]", "8")
    page.fill("#mha-deployment-planner [data-name=num_gpus]", "8")
    assert page.text_content("#mha-deployment-planner .mha-error") == ""


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
    assert any(e and "from K and V: check that each is counted" in e for e in expected)  # the hints are exercised


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
    tab.reload()
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


def test_a_request_left_open_is_named_when_the_wait_gives_up(server, visit):
    """settle waits for a page's requests to finish and, when one never does, names it."""
    tab = visit()
    tab.page.route("**/never-answered", lambda route: None)  # held: neither continued nor aborted
    tab.page.goto(f"{server}/search.html", wait_until="load")
    settle(tab, timeout_s=10)  # nothing open: returns
    tab.page.evaluate("() => { fetch('/never-answered').catch(() => {}); }")
    with pytest.raises(PageTimeout, match=r"requests still open after 1 s: http://127\.0\.0\.1:\d+/never-answered"):
        settle(tab, timeout_s=1)


def test_a_request_to_another_host_is_recorded_and_fails(server, visit):
    """A page's request to another host (a name or an address) is recorded as blocked and fails at the
    browser's dead proxy (site_browser.CHROMIUM_ARGS): nothing leaves the machine, even where the network is up."""
    tab = visit()
    ended = {}
    tab.page.on("requestfailed", lambda request: ended.setdefault(request.url, f"failed: {request.failure}"))
    tab.page.on("requestfinished", lambda request: ended.setdefault(request.url, "finished"))
    tab.page.goto(f"{server}/search.html", wait_until="load")
    settle(tab, timeout_s=10)
    away = ["https://pypi.org/simple/numpy/", "http://192.0.2.1/figure.png"]
    tab.page.evaluate("""(urls) => { for (const url of urls) { const img = new Image(); img.src = url; } }""", away)
    settle(tab, timeout_s=20)
    assert [ended.get(url, "never ended") for url in away] == ["failed: net::ERR_PROXY_CONNECTION_FAILED"] * 2, ended
    blocked = [problem for problem in tab.problems if problem.startswith("request to another host (blocked)")]
    assert blocked == [f"request to another host (blocked): {url}" for url in away], tab.problems


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


def _unchanged_kernel_packages(site):
    """The browser edition's kernel packages copied byte for byte from the pinned jupyterlite-xeus-python
    wheel (python, numpy, IPython ...): third-party files, not read by the leak test."""
    built = site.html / "lite" / "extensions" / lite_site.KERNEL / "static"
    pinned = lite_site.kernel_static()
    return {path.relative_to(site.html).as_posix() for path in built.glob("*.tar.gz")
            if (pinned / path.name).is_file() and (pinned / path.name).read_bytes() == path.read_bytes()}


def test_learner_edition_leaks_no_answer_and_no_hidden_test(site):
    """No line of a solution region or a hidden test, in any file of the built site, the browser
    edition's included: its notebooks, its listings and the packages it packs into the kernel."""
    secrets = support.secret_lines()
    assert len(secrets) > 50, "too few solution and hidden-test lines found to make the test mean anything"
    assert (site.html / "lite" / "files").is_dir(), "the learner edition has no browser edition (lite/)"
    found = support.leaks(site.html, secrets, skip=_unchanged_kernel_packages(site))
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


def test_lite_pages_load_nothing_from_another_host(site):
    """The browser edition's pages name no other host to load from (the browser tests above also
    block every other host while JupyterLab and its kernel load)."""
    from website.ext import offline_site

    loads = {}
    for page in sorted((site.html / "lite").rglob("*.html")):
        found = offline_site.external_loads(page.read_text(encoding="utf-8", errors="replace"))
        if found:
            loads[page.relative_to(site.html).as_posix()] = found
    assert not loads, loads
    config = json.loads((site.html / "lite" / "jupyter-lite.json").read_text(encoding="utf-8"))["jupyter-config-data"]
    assert not [v for v in config.values() if isinstance(v, str) and re.match(r"(https?:)?//", v)], config


def test_lite_buttons_open_each_page_in_the_browser_edition(site):
    summary = lite_summary(site)
    for docname, copy in summary["chapters"].items():
        html = site.page(docname).read_text(encoding="utf-8")
        assert f'href="{lite_site_url(docname, copy)}"' in html, docname
    exercises = site.page("book/exercises").read_text(encoding="utf-8")
    assert all(f"path={path}" in exercises for path in summary["exercises"])
    landing = (site.html / "lite" / "index.html").read_text(encoding="utf-8")
    assert "IndexedDB" in landing and "Download" in landing
    assert all(f"path={path}" in landing for path in [*summary["exercises"], *summary["chapters"].values()])


def test_the_book_build_leaves_the_browser_plan_the_browser_edition_holds(site):
    """Sphinx wrote the chapter plan its buttons used (website/build.py's MHA_LITE_PLAN) and the browser edition holds
    the same chapters; that the browser edition's build reads the plan rather than working it out again is
    tests/test_website.py's test."""
    chapters, left_out = lite_site.read_plan(site.html.parent / "lite-plan.json")
    summary = lite_summary(site)
    assert (summary["chapters"], summary["left_out"]) == (chapters, left_out)


def lite_site_url(docname, copy):
    import html

    from website.lite import buttons as lite_buttons

    return html.escape(lite_buttons.lite_url(docname, lite_site.page_url(copy)))


# --- spaced repetition of the drills and flashcards --------------------------------------------------

# Date.now() of the page, moved by the test: sessionStorage keeps the fake time across reloads.
FAKE_CLOCK = """
(() => {
  const real = Date.now;
  Date.now = () => { const t = sessionStorage.getItem('mha-test-clock'); return t === null ? real() : Number(t); };
})();
"""
SET_CLOCK = "(t) => sessionStorage.setItem('mha-test-clock', String(t))"
T0 = 1_767_268_800_000  # 2026-01-01 12:00 UTC
HOUR = 3_600_000


def test_flashcards_answered_wrong_come_back_first_and_progress_round_trips(server, visit, tmp_path):
    """With a fake clock: a card answered wrong is due again within the hour, before one answered
    right (due in a day); the progress file exported and imported gives back the same storage."""
    tab = visit(accept_downloads=True)
    tab.page.add_init_script(FAKE_CLOCK)
    tab.page.route("**/_static/mha-flashcards.js", lambda route: route.fulfill(
        content_type="text/javascript", body="window.MHA_FLASHCARDS = " + json.dumps(FIXTURE_CARDS) + ";"))
    load(tab, f"{server}/{DRILLS}.html")
    page = tab.page
    page.evaluate(SET_CLOCK, T0)
    tab.reload()
    widget = page.locator("[data-mha-widget=flashcards]")
    assert "Q1. Does the cache" in widget.inner_text()
    widget.get_by_role("button", name="Ask me again").click()  # Q1 wrong
    assert "Q2. Do 16 heads" in widget.inner_text()
    widget.get_by_role("button", name="I knew it").click()  # Q2 right
    ids = [card["id"] for card in FIXTURE_CARDS]
    order = "(ids) => { const S = window.MHA_SCHEDULE; return S.queue(S.load(), 'cards', ids); }"
    page.evaluate(SET_CLOCK, T0 + HOUR)
    tab.reload()
    assert page.evaluate(order, ids) == [ids[0]]  # an hour later: only the one answered wrong is due
    assert "Q1. Does the cache" in widget.inner_text() and "Due now: 1 card(s)" in widget.inner_text()
    page.evaluate(SET_CLOCK, T0 + 25 * HOUR)
    assert page.evaluate(order, ids) == ids  # a day later both are due, the wrong one first

    with page.expect_download() as download:
        page.get_by_role("button", name="Export progress").click()
    saved = tmp_path / "progress.json"
    download.value.save_as(saved)
    # the drills' own keys (the theme keeps its colour mode in localStorage too)
    stored = ("() => Object.fromEntries(Object.keys(localStorage).filter((k) => k.startsWith('mha-')).sort()"
              ".map((k) => [k, localStorage.getItem(k)]))")
    before = page.evaluate(stored)
    assert set(before) == {"mha-schedule", "mha-flashcards-progress"}
    page.evaluate("() => localStorage.clear()")
    tab.reload()
    with page.expect_navigation():
        page.set_input_files("#mha-progress-file", str(saved))
    assert page.evaluate(stored) == before
    assert not tab.problems, "\n".join(tab.problems)


# --- the question index: every link a reader clicks resolves (issue 38) ---------------------------

def test_every_link_of_the_question_index_resolves(site):
    assert site.returncode == 0, site.log[-3000:]
    page = site.page(qil.PAGE)
    assert page.is_file(), f"{page} was not built"
    assert len(qil.read_page(page).hrefs) > len(qil.QUESTIONS), "the page lost its links"
    assert qil.broken_links(page, site.html) == []


def test_every_question_links_its_answer(site):
    assert qil.read_page(site.page(qil.PAGE)).answer_links == len(qil.QUESTIONS)


# --- the question index's link checker, on a two-page site -------------------------------------------------------

@pytest.fixture
def tiny_index_site(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "b.html").write_text('<main><h1 id="top">B</h1></main>', encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("href, why", [
    ("b.html#top", None),
    ("b.html", None),
    ("#here", None),
    ("https://example.org/x", None),
    ("b.html#gone", "no id 'gone' in b.html"),
    ("c.html#top", "no such file"),
])
def test_the_question_index_checker_finds_a_broken_link(tiny_index_site, href, why):
    page = tiny_index_site / "book" / "a.html"
    page.write_text(f'<main id="here"><p>Answer: <a class="reference internal" href="{href}">x</a></p></main>',
                    encoding="utf-8")
    assert qil.broken_links(page, tiny_index_site) == ([] if why is None else [(href, why)])
    assert qil.read_page(page).answer_links == 1
