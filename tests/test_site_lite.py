"""The browser edition (JupyterLite) in the built site: its exercises judged in the page as on the desktop.

One JupyterLite tab, its kernel started once (lite_lab), runs every test here: a wrong answer, a blank one and
a right one give the desktop's messages; exercises 11 and 12 judge as on the desktop; every released exercise
opens, and two chapters print what they printed on the desktop; every exercise, with the solution's answers,
runs top to bottom, and so does every chapter (issue 36). It reads the one build of tests/site_browser.py. The
chapters ran in a module and a kernel of their own for a while (2026-12-06); once they ran in 40 CPU-seconds,
a second kernel's start cost more than the worker it freed.
"""
# ruff: noqa: F811 (a test names the fixtures it uses, imported from site_browser)
import json
import re
from pathlib import Path

import lite_support as lite
import nbformat
from site_browser import (  # noqa: F401 (the fixtures: pytest finds them among the module's names)
    LITE_ONLY,
    SITE_DOCNAMES,
    browser,
    error_lines,
    lite_lab,
    lite_summary,
    server,
    site,
)


def _page_line(result):
    """The one line a test cell shows in the page (None: it passed)."""
    if not result["errors"]:
        return None
    return result["shown"] or "\n".join(result["errors"][0]["traceback"])


def _run_scenario(tab, assignment, path, sources, owners):
    """Run the answers ``owners`` (with ``sources`` at their cells) and their tests, in the page and on
    the desktop; ``{test cell index: (page line, desktop line)}``."""
    _, answers, tests = lite.layout(assignment)
    order = [(kind, i) for owner in owners for kind, i in [("answer", answers[owner])] + [("test", t) for t in tests[owner]]]
    page = {}
    for kind, index in order:
        result = tab.page.evaluate(lite.RUN_CELL, [path, index, sources[index] if kind == "answer" else None])
        if kind == "test":
            page[index] = _page_line(result)
    desktop = lite.desktop_lines(assignment, sources, order)
    return {index: (page[index], desktop[index]) for index in page}


def test_lite_exercise_gives_the_desktops_messages(lite_lab, tmp_path):
    """In the browser, a wrong answer and a blank one get the desktop's message (for a question built on
    a blank earlier answer, the pointer to it), right answers pass, and an answer that calls a reference
    the graded kernel switches off is named as mha_course.check names it."""
    from grading_support import REFERENCE_CALLS, WRONG_ANSWERS

    tab, assignment, path = lite_lab
    setup, answers, _ = lite.layout(assignment)
    assert tab.page.evaluate(lite.RUN_CELL, [path, setup, None])["errors"] == []
    solution = lite.solution_answers(assignment)
    right = {answers[owner]: solution[owner] for owner in answers}
    name, owner, old, new, _ = WRONG_ANSWERS[assignment][0]
    wrong = {**right, answers[owner]: solution[owner].replace(old, new)}
    owners = list(answers)  # every answer and test, in order: later questions run the wrong one too

    outcome = _run_scenario(tab, assignment, path, wrong, owners)
    assert [i for i, (page, desktop) in outcome.items() if page != desktop] == [], outcome
    assert any(page for page, _ in outcome.values()), f"{name}: no test failed in the page"

    blank = {**right, answers[owner]: lite.release_cells(assignment)[answers[owner]].source}  # as released
    outcome = _run_scenario(tab, assignment, path, blank, owners)
    assert [i for i, (page, desktop) in outcome.items() if page != desktop] == [], outcome
    assert any(page and "an earlier answer" in page for page, _ in outcome.values()), outcome

    outcome = _run_scenario(tab, assignment, path, right, owners)
    assert outcome and all(page is None and desktop is None for page, desktop in outcome.values()), outcome

    source = REFERENCE_CALLS[assignment][owner]
    rule = lite.reference_rule(assignment, owner, source, tmp_path)
    outcome = _run_scenario(tab, assignment, path, {**right, answers[owner]: source}, [owner])
    expected = f"AssertionError: NOT ALLOWED: {rule} (in {lite.function_name(source)}; it scores 0 when graded)"
    assert {page for page, _ in outcome.values()} == {expected}
    assert {desktop for _, desktop in outcome.values()} == {None}  # the desktop's Validate passes it: check names it
    assert not tab.problems, "\n".join(tab.problems)


#: The exercises whose references use mha_kit's newest code (FP8 byte counts, prefix caches, sinks, merged
#: softmax states), which came with its ml_dtypes formats: judged in the page too, beside the worked one.
LITE_NEWEST_EXERCISES = ("11_serving_2026", "12_long_context")


def test_lite_newest_exercises_judge_as_on_the_desktop(lite_lab):
    """In the page's kernel, exercises 11 and 12 with one wrong answer give the desktop's line for each
    test cell (a wrong answer fails, right ones pass): their references run on numpy 1.25 without ml_dtypes."""
    from grading_support import WRONG_ANSWERS

    tab, _, _ = lite_lab
    differences = []
    for assignment in LITE_NEWEST_EXERCISES:
        cells, (setup, answers, tests) = lite.release_cells(assignment), lite.layout(assignment)
        solution = lite.solution_answers(assignment)
        name, owner, old, new, _ = WRONG_ANSWERS[assignment][0]
        sources = {answers[o]: solution[o] for o in answers}
        sources[answers[owner]] = solution[owner].replace(old, new)
        order = [(kind, i) for o in answers for kind, i in [("answer", answers[o])] + [("test", t) for t in tests[o]]]
        tab.page.evaluate(lite.EXECUTE, ["%reset -f"])
        assert tab.page.evaluate(lite.EXECUTE, [cells[setup].source])["errors"] == [], assignment
        page = {}
        for kind, index in order:
            got = tab.page.evaluate(lite.EXECUTE, [sources[index] if kind == "answer" else cells[index].source])
            if kind == "test":  # xeus-python names the class "<class 'module.Name'>": the desktop's "Name"
                page[index] = re.sub(r"^<class '(?:[\w.]+\.)?(\w+)'>", r"\1", got["errors"][0]) if got["errors"] else None
        desktop = lite.desktop_lines(assignment, sources, order)
        assert any(page.values()), f"{assignment}, {name}: no test failed in the page"
        differences += [f"{assignment} cell {i}: page {page[i]!r}, desktop {desktop[i]!r}" for i in page
                        if page[i] != desktop[i]]
    assert not differences, "\n".join(differences)


def test_lite_opens_every_exercise_and_runs_chapters_as_on_the_desktop(lite_lab, site):
    """Every released exercise opens and its imports run; two chapters open with their figures, and
    every cell of theirs prints in the browser what it printed on the desktop (numpy 1.25 there)."""
    tab, _, _ = lite_lab
    summary = lite_summary(site)
    for path in summary["exercises"]:
        cells = nbformat.read(site.html / "lite" / "files" / path, as_version=4).cells
        opened = tab.page.evaluate(lite.OPEN, [path, False])
        assert opened["cells"] == opened["rendered"] == len(cells), (path, opened)
        setup = next(c.source for c in cells if c.cell_type == "code")
        assert tab.page.evaluate(lite.EXECUTE, [setup])["errors"] == [], path
    copies = [summary["chapters"][d] for d in SITE_DOCNAMES if d in summary["chapters"]]
    with_figures = [p for p in copies if '"attachments": {\n    "figure1.png"' in (site.html / "lite" / "files" / p).read_text()]
    assert len(with_figures) >= 2
    differences = []
    for path in with_figures[:2]:
        nb = json.loads((site.html / "lite" / "files" / path).read_text(encoding="utf-8"))
        opened = tab.page.evaluate(lite.OPEN, [path, False])
        assert opened["cells"] == opened["rendered"] == len(nb["cells"]), (path, opened)
        alts = [re.search(r"!\[(.*?)\]\(attachment:", c["source"]).group(1) for c in nb["cells"] if c.get("attachments")]
        figures = tab.page.evaluate(lite.FIGURES, [path])
        assert [f and f["alt"] for f in figures] == alts and all(f["width"] > 0 for f in figures), (path, figures)
        tab.page.evaluate(lite.EXECUTE, ["%reset -f"])
        for index, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
            got = tab.page.evaluate(lite.EXECUTE, ["".join(cell["source"])])
            expected = lite.stored_text(cell)
            hidden = "remove-cell" in cell.get("metadata", {}).get("tags", [])  # kept to define names, no outputs stored
            if got["errors"] or (got["text"] != expected and not hidden):
                differences.append(f"{path} code cell {index}: {got['errors'] or got['text'][:300]!r}, desktop {expected[:300]!r}")
    assert not differences, "\n".join(differences)
    # JupyterLab 4.0 puts a figure's <img src="attachment:..."> in the page before it swaps in the picture,
    # so the browser logs that it cannot load "attachment:" (the pictures themselves decoded, above)
    problems = [p for p in tab.problems if not re.fullmatch(r"console error: Failed to load resource: "
                                                            r"net::ERR_UNKNOWN_URL_SCHEME \(at attachment:figure\d+\.png\)", p)]
    assert not problems, "\n".join(problems)


def test_lite_runs_every_exercise_top_to_bottom(lite_lab, site):
    """Issue 36: every released exercise, the solution's answers filled in, runs top to bottom in the page's
    kernel with no error output."""
    tab, _, _ = lite_lab
    chosen = set(LITE_ONLY.split(",")) if LITE_ONLY else None
    failures = []
    for path in lite_summary(site)["exercises"]:
        assignment = Path(path).stem
        if (chosen is not None and path not in chosen) or assignment not in lite.ASSIGNMENTS:
            continue
        solution = lite.solution_answers(assignment)
        tab.page.evaluate(lite.EXECUTE, ["%reset -f"])
        cells = [(index, cell.metadata.get("nbgrader", {}).get("grade_id"), cell)
                 for index, cell in enumerate(nbformat.read(site.html / "lite" / "files" / path, as_version=4).cells)
                 if cell.cell_type == "code"]
        sources = [solution[owner] if owner in solution else cell.source for _, owner, cell in cells]
        got = tab.page.evaluate(lite.EXECUTE, [lite.run_cells_code(sources)])  # one request: stops at the first error
        errors, ran = error_lines(got), lite.FIRST_FAILED.search(got["text"])
        if errors or not ran or ran.group(1) != "None":
            index, owner, _ = cells[int(ran.group(1))] if ran and ran.group(1) != "None" else (None, None, None)
            failures.append(f"{path} cell {index} ({owner or 'setup'}): {errors[0][:300] if errors else got['text'][-300:]}")
    assert not failures, "\n".join(failures)


def test_the_chapter_runner_names_the_first_cell_that_fails(lite_lab):
    """lite.run_cells_code, as the next test uses it: magics and prints run, a failing cell is named with its
    error, and nothing after it runs."""
    tab, _, _ = lite_lab
    tab.page.evaluate(lite.EXECUTE, ["%reset -f"])
    sources = ["%config InlineBackend.figure_formats = ['png']", "y = 41", "y += 1\nprint('y is', y)",
               "z = not_defined_anywhere", "print('after the error')"]
    got = tab.page.evaluate(lite.EXECUTE, [lite.run_cells_code(sources)])
    assert lite.FIRST_FAILED.search(got["text"]).group(1) == "3", got
    assert error_lines(got) == ["NameError: name 'not_defined_anywhere' is not defined"], got
    assert "y is 42" in got["text"] and "after the error" not in got["text"], got
    got = tab.page.evaluate(lite.EXECUTE, [lite.run_cells_code(sources[:3])])
    assert lite.FIRST_FAILED.search(got["text"]).group(1) == "None" and not got["errors"], got


def test_lite_runs_every_chapter_top_to_bottom(lite_lab, site):
    """Issue 36: every chapter copy runs top to bottom in the page's kernel with no error output (Continuous
    batching raised NameError in five cells when its copy left out a remove-cell cell that defines names)."""
    tab, _, _ = lite_lab
    chosen = set(LITE_ONLY.split(",")) if LITE_ONLY else None
    failures = []
    for path in lite_summary(site)["chapters"].values():
        if chosen is not None and path not in chosen:
            continue
        nb = json.loads((site.html / "lite" / "files" / path).read_text(encoding="utf-8"))
        tab.page.evaluate(lite.EXECUTE, ["%reset -f"])
        sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
        got = tab.page.evaluate(lite.EXECUTE, [lite.run_cells_code(sources)])  # stops at the first error
        errors, ran = error_lines(got), lite.FIRST_FAILED.search(got["text"])
        if errors or not ran or ran.group(1) != "None":
            where = f"code cell {ran.group(1)}" if ran else "(the run did not finish)"
            failures.append(f"{path} {where}: {errors[0][:300] if errors else got['text'][-300:]}")
    assert not failures, "\n".join(failures)
