"""The browser edition's parts, without a browser: the kernel's packages and their import check, the chapters'
copies, the page's check of switched-off references, the buttons.

The browser itself (JupyterLite in Chromium, the judge's messages, mha_kit's numbers there) is
tested in tests/test_site_lite.py, on the built site.
"""

import io
import json
import re
import sys
import tarfile
import textwrap

import nbformat
import numpy_floor
import pytest
from booktoc import REPO_ROOT

from website.lite import buttons as lite_buttons
from website.lite import kernel as lite_kernel
from website.lite import mha_lite
from website.lite import notebooks as lite_notebooks
from website.lite import site as lite_site
from website.lite import trial as lite_trial

from mha_course.course import ASSIGNMENTS, BROWSER_SIDE, COURSE, kernel_side_modules, package_files  # noqa: E402
from mha_course.judge.core import parse_runs  # noqa: E402

STATIC = lite_site.kernel_static()


@pytest.fixture(scope="module")
def browser():
    """What the browser's kernel can import (read from the pinned kernel environment, .venv-lite)."""
    if not STATIC.is_dir():
        pytest.fail(f"{STATIC} is missing: run `make lite-env` (make test does it)")
    return lite_site.browser_modules(STATIC)


# --- what the kernel can import, and what of the course it gets ------------------------------------


def test_the_browser_has_numpy_and_ipython_but_no_nbformat_or_matplotlib(browser):
    assert {"numpy", "IPython", "json", "ast", "fractions"} <= browser
    assert not {"nbformat", "nbgrader", "matplotlib", "myst_nb"} & browser
    assert lite_kernel.available("math", browser)  # a C module: built into the browser's interpreter
    assert not lite_kernel.available("nbformat.v4", browser)


def _package(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_the_course_is_packed_by_folder_the_browser_side_whole():
    """What the page runs of mha_course is the folder rule's browser side (its folders whole) and the package's
    __init__.py: the inline judge and its questions' helpers, nothing of grading, nbgrader or the sandbox."""
    files = lite_kernel.course_files()
    assert sorted(files) == ["mha_course", *kernel_side_modules(BROWSER_SIDE)]
    assert {"mha_course.kernel.cases", "mha_course.kernel.watch", "mha_course.judge.core", "mha_course.judge.questions",
            "mha_course.judge.diagnoses", "mha_course.course", "mha_course.notebook", "mha_course.wire"} <= set(files)
    assert not [m for m in files if m.split(".")[-1] in ("preprocessor", "safegrade", "selfgrade", "release", "check")
                or m.startswith(("mha_course.plugins", "mha_course.grade"))]
    assert all(path.is_file() for path in files.values())


def _packed():
    """``{module name: path}`` of every Python file the build packs for the kernel, as site.kernel_packages checks them."""
    hook = lite_kernel.RUNTIME / lite_kernel.HOOK / "__init__.py"
    return {**lite_kernel.course_files(), **dict(lite_site.grading_question_files()), lite_kernel.HOOK: hook}


def test_what_the_packed_files_import_is_in_the_browser(browser):
    """The real check passes, and it reads the imports: without numpy in the browser, it names a file importing it."""
    packed = _packed()
    assert len([m for m in packed if m.endswith("_grading_questions")]) == len(ASSIGNMENTS)
    lite_kernel.check_imports(packed, browser)
    with pytest.raises(lite_kernel.MissingModuleError, match=re.escape(f"solutions/{ASSIGNMENTS[0]}/grading_questions.py imports numpy, ")):
        lite_kernel.check_imports(packed, browser - {"numpy"})


def _questions_root(tmp_path, source):
    """A copy of the repository (links) whose solutions/ holds the questions of every assignment and one more file."""
    for name in ("mha_kit", "mha_course", "exercises", "pyproject.toml"):
        (tmp_path / name).symlink_to(REPO_ROOT / name)
    for assignment in ASSIGNMENTS:
        (tmp_path / "solutions" / assignment).mkdir(parents=True)
        (tmp_path / "solutions" / assignment / "grading_questions.py").symlink_to(
            REPO_ROOT / "solutions" / assignment / "grading_questions.py")
    return _package(tmp_path, {"solutions/99_extra/grading_questions.py": source})


def test_the_build_refuses_questions_that_import_what_the_browser_lacks(browser, tmp_path):
    """grading_questions.py lives outside the folders: a lazy import of nbformat in one stops the build with one
    line naming the import and the file, before anything is packed."""
    root = _questions_root(tmp_path, """
        import numpy as np
        from mha_course.judge.questions import question

        def describe(case):
            import nbformat
            return nbformat.__name__
        """)
    with pytest.raises(lite_kernel.MissingModuleError) as error:
        lite_site.kernel_packages(browser, root)
    assert str(error.value) == ("solutions/99_extra/grading_questions.py imports nbformat, which the browser edition's "
                                "kernel does not have (the standard library, numpy 1.25, IPython, mha_kit)")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("line, unpacked", [
    ("from mha_course.plugins.graded_kit import refused", "mha_course.plugins.graded_kit"),
    ("from mha_course import grade", "mha_course.grade"),
    ("import mha_course.selfgrade", "mha_course.selfgrade"),
])
def test_the_build_refuses_an_import_of_mha_course_the_folders_do_not_pack(browser, tmp_path, line, unpacked):
    """The questions may import mha_course's browser side only: the folder rule packs nothing else."""
    root = _questions_root(tmp_path, f"def check(got):\n    {line}\n")
    with pytest.raises(lite_kernel.MissingModuleError, match=rf"^solutions/99_extra/grading_questions\.py imports "
                                                              rf"{re.escape(unpacked)}, which the browser edition does "
                                                              r"not pack \(it packs mha_course\.course\.BROWSER_SIDE\)$"):
        lite_site.kernel_packages(browser, root)


def test_relative_imports_of_a_packed_module_are_resolved(tmp_path, browser):
    """A judge module's ``from .. import grade`` (inside a function) is mha_course.grade, which is not packed;
    ``from . import expect`` and ``from ..wire import X`` are packed modules and names."""
    files = _package(tmp_path, {
        "mha_course/__init__.py": "",
        "mha_course/wire.py": "X = 1\n",
        "mha_course/judge/__init__.py": "",
        "mha_course/judge/expect.py": "",
        "mha_course/judge/core.py": "from . import expect\nfrom ..wire import X\n\ndef f():\n    from .. import grade\n",
        "mha_course/grade/__init__.py": "",
    })
    packed = {m: files / p for m, p in [("mha_course", "mha_course/__init__.py"), ("mha_course.wire", "mha_course/wire.py"),
                                       ("mha_course.judge", "mha_course/judge/__init__.py"),
                                       ("mha_course.judge.expect", "mha_course/judge/expect.py"),
                                       ("mha_course.judge.core", "mha_course/judge/core.py")]}
    with pytest.raises(lite_kernel.MissingModuleError, match=r"^mha_course/judge/core\.py imports mha_course\.grade, "):
        lite_kernel.check_imports(packed, browser, files)
    del packed["mha_course.judge.core"]
    lite_kernel.check_imports(packed, browser, files)


def test_the_build_packs_the_folders_the_questions_the_notebooks_and_the_hook(browser):
    packages = lite_site.kernel_packages(browser)
    site = lite_kernel.SITE_PACKAGES
    course = {m for m in packages["mha_course"] if m.endswith(".py") and m.startswith(f"{site}/mha_course/")}
    assert course == {f"{site}/{p}" for p in ["mha_course/__init__.py", *package_files(BROWSER_SIDE)]}
    assert {f"{site}/solutions/{a}/grading_questions.py" for a in ASSIGNMENTS} | {
        f"{site}/exercises/{a}/{a}.ipynb" for a in ASSIGNMENTS} <= set(packages["mha_course"])
    assert not [m for m in packages["mha_course"] if "grading_answers" in m or "/source/" in m]
    assert set(packages["mha_lite"]) == {f"{site}/mha_lite/__init__.py", f"{site}/mha_lite/rules.json",
                                         "etc/ipython/ipython_config.py"}


def test_import_mha_kit_needs_only_numpy(browser, tmp_path):
    lite_kernel.check_mha_kit(browser)  # the real package
    root = _package(tmp_path, {
        "mha_kit/__init__.py": "from .units import size\nfrom . import fancy\n",
        "mha_kit/units.py": "import numpy as np\n\ndef size():\n    import ml_dtypes  # lazily: fine\n",
        "mha_kit/fancy.py": "import scipy.special\n",
    })
    with pytest.raises(lite_kernel.MissingModuleError, match=r"import mha_kit needs scipy"):
        lite_kernel.check_mha_kit({"numpy"}, root)


def test_packages_are_reproducible_and_listed(tmp_path):
    (tmp_path / lite_kernel.META).write_text(json.dumps({"prefix": "/", "packages": [{"name": "python"}]}))
    files = {"lib/python3.11/site-packages/b/__init__.py": b"B = 2\n", "lib/python3.11/site-packages/a.py": b"A = 1\n"}
    name = lite_kernel.add_package(tmp_path, "demo", "1.0", files)
    first = (tmp_path / name).read_bytes()
    assert lite_kernel.add_package(tmp_path, "demo", "1.0", files) == name and (tmp_path / name).read_bytes() == first
    with tarfile.open(fileobj=io.BytesIO(first)) as archive:
        assert archive.getnames() == sorted(files)
        assert archive.extractfile("lib/python3.11/site-packages/a.py").read() == b"A = 1\n"
    meta = json.loads((tmp_path / lite_kernel.META).read_text())
    assert [p["name"] for p in meta["packages"]] == ["python", "demo"]  # listed once
    assert meta["packages"][1]["filename"] == name


# --- the chapters' copies ---------------------------------------------------------------------------


CONTEXT = dict(glued={"cache": "320 KiB", "ratio": "2.0"}, citations={"llama3": "Dubey et al., 2024"},
               titles={"worked_example": "A worked example"}, copies={"worked_example"})


@pytest.mark.parametrize(("myst", "markdown"), [
    ("A token takes {glue:text}`cache` per token.", "A token takes 320 KiB per token."),
    ("Ratio {glue:text}`ratio:.1f` here.", "Ratio 2.0 here."),
    ("As reported {cite}`llama3`.", "As reported (Dubey et al., 2024)."),
    ("As reported {cite:p}`llama3{§3.2}`.", "As reported (Dubey et al., 2024, §3.2)."),
    ("See {doc}`worked_example`.", "See [A worked example](worked_example.ipynb)."),
    ("See {doc}`positions`.", "See *positions*."),  # no copy in the browser: the title, no link
    ("See {ref}`the figures <llama-figures>`.", "See the figures."),
    ("(kv-chain)=\n## Follow-up chain", "## Follow-up chain"),
    ("```python\nx = {glue:text}`cache`\n```", "```python\nx = {glue:text}`cache`\n```"),  # code stays code
])
def test_myst_becomes_markdown(myst, markdown):
    assert lite_notebooks.myst_to_markdown(myst, lite_notebooks.Context(**CONTEXT)) == markdown


def test_admonitions_become_quotes_and_dropdowns_details():
    myst = textwrap.dedent("""\
        ````{admonition} [E] Q1. Why {glue:text}`cache`?
        :class: dropdown followup
        **Strong answer.** Because.

        ```{tip}
        Say it plainly.
        ```
        ````
        :::{error} The claim
        It is free.
        :::""")
    markdown = lite_notebooks.myst_to_markdown(myst, lite_notebooks.Context(**CONTEXT))
    assert markdown == textwrap.dedent("""\
        <details>
        <summary>[E] Q1. Why 320 KiB?</summary>

        **Strong answer.** Because.

        > **Tip**
        >
        > Say it plainly.

        </details>
        > **The claim**
        >
        > It is free.""")


def test_drawing_statements_are_split_from_the_rest():
    source = textwrap.dedent("""\
        %config InlineBackend.figure_formats = ['png']
        import numpy as np
        from myst_nb import glue
        from mha_kit import plots, roofline
        import matplotlib.pyplot as plt

        # the sizes
        sizes = np.arange(3)
        fig, ax = plt.subplots()
        bars = ax.bar(sizes, sizes)
        ax.bar_label(bars)
        print(sizes.sum())
        figure = plots.cost(sizes)""")
    kept, drawing = lite_notebooks.split_drawing(source, {"plots", "plt"})
    assert kept == "import numpy as np\nfrom mha_kit import roofline\n\n# the sizes\nsizes = np.arange(3)\nprint(sizes.sum())"
    assert drawing == ("fig, ax = plt.subplots()\nbars = ax.bar(sizes, sizes)\nax.bar_label(bars)\n"
                       "figure = plots.cost(sizes)")


def test_a_name_a_drawing_bound_is_free_again_once_code_that_does_not_draw_binds_it():
    """A figure cell's loop variable (``k``) stays a drawing name only until a statement that does not draw binds
    it again; a comprehension's own ``k, v`` are its own. attention_cost's browser copy lost a whole table loop
    (``{k: v[...] for k, v in ...}``, after a figure cell's ``for k in ...``) and then failed on the missing rows."""
    tainted = {"plots"}
    _, drawing = lite_notebooks.split_drawing("for k in range(3):\n    plots.bar(k)", tainted)
    assert drawing and "k" in tainted
    kept, drawing = lite_notebooks.split_drawing(textwrap.dedent("""\
        rows = {}
        for name in ("a", "b"):
            rows[name] = {k: v * 2 for k, v in (("x", 1), ("y", 2))}
        print(rows)"""), tainted)
    assert drawing == "" and "for name in" in kept
    kept, drawing = lite_notebooks.split_drawing("k = 5\nprint(k)", tainted)
    assert (kept, drawing) == ("k = 5\nprint(k)", "") and "k" not in tainted
    # a drawing name used beside a comprehension of its own name still draws
    _, drawing = lite_notebooks.split_drawing("fig = plots.figure()\nfig.savefig([fig for fig in 'ab'][0])", tainted)
    assert drawing == "fig = plots.figure()\nfig.savefig([fig for fig in 'ab'][0])"

def _chapter_with_figures():
    for docname in lite_site.toc_chapters():
        nb = lite_notebooks.read(REPO_ROOT / f"{docname}.ipynb")
        if any("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", [])) and any(
                "remove-cell" in c.get("metadata", {}).get("tags", []) for c in nb["cells"]):
            return docname, nb
    pytest.fail("no chapter has both a figure and a remove-cell cell")


def test_a_chapter_copy_runs_without_myst_nb_or_matplotlib_and_shows_its_figures():
    docname, nb = _chapter_with_figures()
    copy = lite_notebooks.browser_copy(nb, lite_notebooks.Context(citations=lite_notebooks.citation_labels()))
    nbformat.validate(nbformat.from_dict(json.loads(json.dumps({**copy, "cells": [
        dict(c, id=f"c{i}") for i, c in enumerate(copy["cells"])]}))))
    code = "\n".join(c["source"] for c in copy["cells"] if c["cell_type"] == "code")
    markdown = "\n".join(c["source"] for c in copy["cells"] if c["cell_type"] == "markdown")
    for gone in ("from myst_nb", "import matplotlib", "from mha_kit import plots", "{glue", "{cite", "{doc}", "```{"):
        assert gone not in code + markdown, f"{docname}: {gone!r} is still in the copy"
    compile(re.sub(r"^(\s*)%", r"\1#", code, flags=re.M), docname, "exec")  # IPython magics out, modulo kept
    pictures = sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", [])
                   if "remove-cell" not in c.get("metadata", {}).get("tags", []))
    attached = [a for c in copy["cells"] for a in c.get("attachments", {}).values()]
    assert len(attached) == pictures > 0
    alts = [c["metadata"]["mystnb"]["image"]["alt"] for c in nb["cells"] if "mystnb" in c.get("metadata", {})]
    assert all(f"![{alt}](attachment:" in markdown for alt in alts)
    hidden = [c for c in copy["cells"] if c["cell_type"] == "code" and "remove-cell" in c["metadata"].get("tags", [])]
    removed = [c["source"] for c in nb["cells"] if c["cell_type"] == "code"
               and "remove-cell" in c.get("metadata", {}).get("tags", [])]
    assert len(hidden) == len(removed) and all(c["metadata"]["jupyter"]["source_hidden"] for c in hidden)


def test_a_remove_cell_cell_that_defines_names_stays_in_the_copy_hidden():
    """Issue 36: Continuous batching's copy raised NameError (long_prompt, requests) in five cells: the
    remove-cell cell that defines them was left out. Its code stays, hidden, so every name is defined."""
    nb = lite_notebooks.read(REPO_ROOT / "book" / "continuous_batching.ipynb")
    copy = lite_notebooks.browser_copy(nb, lite_notebooks.Context(citations=lite_notebooks.citation_labels()))
    sources = [c["source"] for c in copy["cells"] if c["cell_type"] == "code"]
    defines = next(i for i, s in enumerate(sources) if s.startswith("long_prompt, flat = "))
    uses = next(i for i, s in enumerate(sources) if "long_prompt" in s and not s.startswith("long_prompt, flat = "))
    assert defines < uses
    hidden = copy["cells"][[c.get("source") for c in copy["cells"]].index(sources[defines])]
    assert hidden["metadata"]["jupyter"] == {"source_hidden": True, "outputs_hidden": True}


def test_chapters_that_cannot_run_in_a_browser_are_left_out(browser):
    chapters, left_out = lite_site.chapter_plan(browser)
    assert len(chapters) >= 2
    assert all("subprocess" in why or "does not have" in why or "tooling" in why for why in left_out.values())
    for docname in left_out:
        nb = lite_notebooks.read(REPO_ROOT / f"{docname}.ipynb")
        assert "import subprocess" in "\n".join(c["source"] for c in nb["cells"]) or left_out[docname]


def test_every_copy_draws_with_no_plotting_module():
    """Every mha_kit.plots* module (plots, plots_serving, plots_context ...) is dropped from the copies."""
    context = lite_notebooks.Context(citations=lite_notebooks.citation_labels())
    drawn = []
    for docname in lite_site.toc_chapters():
        nb = lite_notebooks.read(REPO_ROOT / f"{docname}.ipynb")
        code = "\n".join(c["source"] for c in lite_notebooks.browser_copy(nb, context)["cells"] if c["cell_type"] == "code")
        drawn += [f"{docname}: {line.strip()}" for line in code.splitlines() if re.search(r"\bplots\w*\.|\bplt\.", line)]
    assert not drawn, "\n".join(drawn)


@pytest.fixture(scope="module")
def kit_needs(browser):
    return lite_kernel.kit_needs(browser)


def test_kit_needs_names_what_reaches_a_package_the_browser_lacks(kit_needs):
    needs = kit_needs
    assert needs["storage_dtype"] == needs["round_to_format"] == needs["quantize_kv"] == ["ml_dtypes"]
    assert not {"kv_cache_bytes", "grouped_attention", "soft_cap", "rope_inv_freq"} & set(needs)


def _chapter(*sources):
    return {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": s} for s in sources]}


def test_the_trial_runs_a_chapter_with_only_the_browsers_packages(browser):
    """bf16 needs ml_dtypes and nbformat is not there; int8 quantization and fp16 rounding run."""
    found = lite_trial.failures({
        "bf16": _chapter("import mha_kit as mk", "glue('x', mk.round_to_format(1.0, 'bf16'))"),
        "nbformat": _chapter("import mha_kit as mk", "import nbformat"),
        "int8": _chapter("import numpy as np\nimport mha_kit as mk",
                         "q, s = mk.quantize_per_head(np.ones((2, 3, 4)))\nprint(mk.round_to_format(1.0, 'fp16'))"),
    }, browser)
    assert found["int8"] is None
    assert found["bf16"].startswith("code cell 3: ImportError: format 'bf16' needs the package ml_dtypes")
    assert found["nbformat"].startswith("code cell 3: ModuleNotFoundError: No module named 'nbformat'")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_judge_of_every_exercise_calls_nothing_the_browser_lacks(kit_needs, assignment):
    """Exercises 11 and 12 came with mha_kit's ml_dtypes formats: neither their references nor their
    notebooks call a function that needs a package the browser lacks, so they run in the page."""
    questions = (REPO_ROOT / "solutions" / assignment / "grading_questions.py").read_text(encoding="utf-8")
    release = lite_notebooks.read(REPO_ROOT / "exercises" / assignment / f"{assignment}.ipynb")
    called = lite_notebooks._kit_calls(_chapter(questions)) | lite_notebooks._kit_calls(release)
    assert called and not called & set(kit_needs), sorted(called & set(kit_needs))


# --- the page's check of switched-off references -------------------------------------------------------


@pytest.fixture(scope="module")
def rules(monkeypatch_module):
    table = lite_site.reference_rules()
    monkeypatch_module.setattr(mha_lite, "rules", lambda: table)
    return table


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _notebook(assignment):
    return nbformat.read(REPO_ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)


def _answers_and_tests(assignment):
    """The setup source, ``{answer grade_id: source}`` and ``{answer grade_id: [test sources]}`` of a solution."""
    setup, answers, tests, owner = None, {}, {}, None
    for cell in _notebook(assignment).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if meta.get("solution"):
            owner = meta["grade_id"]
            answers[owner], tests[owner] = cell.source, []
        elif meta.get("grade"):
            tests[owner].append(cell.source)
        elif setup is None:
            setup = cell.source
    return setup, answers, tests


def _calls(namespace, test_source):
    """``[(question, call)]`` that a test cell passes to ``run`` (recorded, not run)."""
    calls = []
    namespace["run"] = lambda question, call, *cases: calls.append((question, call))
    exec(compile(test_source, "<test cell>", "exec"), namespace)
    return calls


def _namespace(setup, answers):
    namespace = {"__name__": "__main__"}
    exec(compile(setup, "<setup>", "exec"), namespace)
    for source in answers.values():
        exec(compile(source, "<answer>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_page_names_an_answer_that_calls_a_switched_off_reference(rules, assignment):
    """Every designed reference call is named with check's rule; no solution answer is."""
    from grading_support import REFERENCE_CALLS

    setup, answers, tests = _answers_and_tests(assignment)
    solution = _namespace(setup, answers)
    for owner, sources in tests.items():
        for question, call in (c for source in sources for c in _calls(solution, source)):
            assert rules["questions"][question] == assignment
            assert mha_lite.not_allowed(question, call) is None, f"{assignment} {question}: the solution is named"
    for owner, source in REFERENCE_CALLS[assignment].items():
        namespace = _namespace(setup, {**answers, owner: source})
        messages = {mha_lite.not_allowed(q, call) for s in tests[owner] for q, call in _calls(namespace, s)}
        assert None not in messages, f"{assignment} {owner}: {source!r} is not named by every test of it"
        for message in messages:
            assert message.startswith("NOT ALLOWED: mk.") and message.endswith("; it scores 0 when graded)")
            assert message.split("NOT ALLOWED: ")[1].split(" (in ")[0] in rules["refused"][assignment].values()


def test_the_page_reads_aliases_imports_and_helpers(rules):
    """``import mha_kit as m``, ``from mha_kit.attention import x`` and a helper the answer calls are all read."""
    refused = {"softmax": "rule softmax", "causal_mask": "rule mask", "split_heads": "rule split"}
    namespace = {"__name__": "__main__"}
    exec(textwrap.dedent("""
        import numpy as np
        import mha_kit as mk
        from mha_kit.attention import causal_mask as _mask

        def helper(x):
            return mk.attention.split_heads(x, 2)

        def answer(x):
            import mha_kit as m
            return helper(x) + m.softmax(x) + _mask(3) + np.exp(x)

        def _call(x):
            return answer(x)
        """), namespace)
    found = mha_lite.reference_uses(namespace["_call"], refused)
    assert found == [("answer", "causal_mask"), ("answer", "softmax"), ("helper", "split_heads")]


def test_rules_name_every_question_of_the_release(rules):
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(REPO_ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
        questions = {q for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") for q, _ in parse_runs(c.source)}
        assert questions and all(rules["questions"][q] == assignment for q in questions)
        assert set(rules["refused"][assignment]) >= set(COURSE[assignment].answers)


# --- the buttons, the floor of numpy ----------------------------------------------------------------------


@pytest.mark.parametrize(("page", "url"), [
    ("book/attention_cost", "../lite/lab/index.html?path=chapters/attention_cost.ipynb"),
    ("index", "lite/lab/index.html?path=chapters/attention_cost.ipynb"),
])
def test_buttons_link_into_the_sites_own_lite_folder(page, url):
    assert lite_buttons.lite_url(page, lite_site.page_url("chapters/attention_cost.ipynb")) == url


def test_the_exercises_box_links_every_release_and_says_where_work_is_kept():
    exercises = lite_site.exercise_notebooks()
    box = lite_buttons.exercises_box("book/exercises", exercises)
    assert len(exercises) == len(ASSIGNMENTS)
    assert all(f'href="../lite/lab/index.html?path={path}"' in box for path in exercises)
    assert "IndexedDB" in box and "Download" in box
    assert "This page runs numpy 1.25; grading runs numpy 2." in box  # issue 37: the page says which numpy grades


def test_numpy_floor_runs_the_kit_tests_only():
    listed = set(numpy_floor.kit_tests())
    assert {"tests/test_attention.py", "tests/test_counting.py", "tests/test_units.py"} <= listed
    assert not {"tests/test_plots.py", "tests/test_site.py", "tests/test_site_lite.py", "tests/test_judge.py", "tests/test_lite.py"} & listed
    # the test helpers the floor admits import only the standard library
    for helper in ("chapter_outputs.py", "speculative_reference.py"):
        assert numpy_floor.imported(REPO_ROOT / "tests" / helper) <= set(sys.stdlib_module_names), helper


def test_the_leak_test_reads_inside_the_kernels_packages(tmp_path):
    """A solution line packed into a kernel package is found; Python source is read line by line."""
    import site_support

    secret = "q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)"
    files = {"lib/python3.11/site-packages/pkg/a.py": f"def f(q):\n    {secret}\n".encode(),
             "lib/python3.11/site-packages/pkg/b.py": f"# not it: x{secret}[0]\n".encode(),
             "lib/python3.11/site-packages/pkg/c.json": json.dumps({"cells": [f"  {secret}\n"]}).encode()}
    (tmp_path / "pkg-1-mha_0.tar.gz").write_bytes(lite_kernel.tar_gz(files))
    (tmp_path / "skipped.tar.gz").write_bytes(lite_kernel.tar_gz(files))
    found = site_support.leaks(tmp_path, {secret}, skip={"skipped.tar.gz"})
    assert found == {"pkg-1-mha_0.tar.gz!lib/python3.11/site-packages/pkg/a.py": [secret],
                     "pkg-1-mha_0.tar.gz!lib/python3.11/site-packages/pkg/c.json": [secret]}


def test_continuous_batching_runs_top_to_bottom_with_the_browsers_packages(browser):
    """Issue 36: the copy of Continuous batching raised NameError in five cells; its whole code, hidden
    remove-cell cells included, runs with only the browser's packages."""
    nb = lite_notebooks.read(REPO_ROOT / "book" / "continuous_batching.ipynb")
    assert lite_trial.failures({"continuous_batching": nb}, browser) == {"continuous_batching": None}
