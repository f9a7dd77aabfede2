"""The site's Sphinx extensions (website/ext/), without building the book.

The flashcard collector runs in a small Sphinx project made here (a notebook with a glued
number and a follow-up admonition), since no chapter has a follow-up chain yet.
"""

import json
import os
import subprocess
import sys
from fractions import Fraction

import nbformat
import pytest
from booktoc import REPO_ROOT

import mha_kit as mk


from website.ext import accessible_pages, learner_edition, practice_pages, search_text, site_buttons, stored_outputs

# --- buttons -----------------------------------------------------------------------------------

JUPYTER_BOOK_DEFAULTS = {
    "repository_url": "https://github.com/executablebooks/jupyter-book",  # jupyter-book's default
    "use_repository_button": True,
    "use_issues_button": True,
    "launch_buttons": {"binderhub_url": "https://mybinder.org"},
    "home_page_in_toc": True,
}


def test_no_repository_no_buttons():
    options = site_buttons.button_options(JUPYTER_BOOK_DEFAULTS, url=None)
    assert "repository_url" not in options
    assert options["launch_buttons"] == {}
    assert not any(options[key] for key in ("use_repository_button", "use_issues_button", "use_edit_page_button"))
    assert options["home_page_in_toc"] is True  # other options are kept


def test_a_repository_gets_every_button():
    options = site_buttons.button_options(JUPYTER_BOOK_DEFAULTS, "https://github.com/someone/mha-book/", "trunk")
    assert options["repository_url"] == "https://github.com/someone/mha-book"
    assert options["repository_branch"] == "trunk"
    assert options["use_repository_button"] and options["use_issues_button"]
    assert options["launch_buttons"]["binderhub_url"] == site_buttons.BINDERHUB_URL


@pytest.mark.parametrize("url", ["http://github.com/a/b", "github.com/a/b", "https://github.com/", "https://github.com/a"])
def test_a_repository_address_must_be_https_owner_and_name(url):
    with pytest.raises(ValueError, match="MHA_REPOSITORY_URL must be an https address"):
        site_buttons.button_options({}, url)


def test_config_holds_no_repository_address():
    config = (REPO_ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "github.com" not in config and "repository:" not in config.replace("# No repository", "")


# --- search text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tex", "text"),
    [
        (r"\(\sqrt{d_h}\)", "√d_h"),
        (r"\(h_{kv}\)", "h_kv"),
        (r"L \cdot 2 \cdot h_{kv} \cdot d_h \cdot b", "L · 2 · h_kv · d_h · b"),
        (r"\[\mathrm{softmax}\left(\frac{QK^\top}{\sqrt{d_h}}\right)V\]", "softmax(QKᵀ/√d_h)V"),
        (r"\min(s, 4{,}096)", "min(s, 4,096)"),
        (r"P = \underbrace{V d}_{\text{embeddings}} + d", "P = V d + d"),
        (r"n^{2}", "n²"),
        (r"d_h^R", "d_h^R"),
        (r"\alpha \le 2\times\beta", "α ≤ 2×β"),
        # a control space written as a backslash before a line break (transformer_block's GLU family), and a lone
        # backslash at the very end: the site build's search hook once died on the first (CI, this stop)
        ("\\text{ReGLU},\\ \\\n\\text{GEGLU}", "ReGLU, GEGLU"),
        ("x\\", "x"),
    ],
)
def test_tex_becomes_readable_text(tex, text):
    assert search_text.tex_to_text(tex) == text


def test_search_index_titles_lose_their_tex():
    index = {"titles": ["Why \\sqrt{d_h}?", "Plain"], "alltitles": {"6. The 1/\\sqrt{d_h} scale": [[1, "x"]]}, "terms": {"a": 1}}
    fixed = search_text.readable_titles(index)
    assert fixed["titles"] == ["Why √d_h?", "Plain"]
    assert fixed["alltitles"] == {"6. The 1/√d_h scale": [[1, "x"]]}
    assert fixed["terms"] == {"a": 1}


def test_formulas_are_found_in_a_page():
    page = '<p>a <span class="math notranslate nohighlight">\\(h &lt; d\\)</span></p><div class="math">\\[x\\]</div>'
    assert search_text.formulas_in(page) == {"\\(h < d\\)", "\\[x\\]"}


def test_search_index_that_is_not_one_is_refused(tmp_path):
    path = tmp_path / "searchindex.js"
    path.write_text("var x = 1;")
    with pytest.raises(ValueError, match="is not a Sphinx search index"):
        search_text.rewrite_search_index(path)


# --- learner edition ---------------------------------------------------------------------------


def test_learner_toc_drops_the_instructor_guide_and_empty_parts():
    toc = {
        "root": "book/index",
        "parts": [
            {"caption": "Practice", "chapters": [{"file": "book/exercises"}, {"file": "book/instructor_guide"}]},
            {"caption": "For instructors", "chapters": [{"file": "book/instructor_guide"}]},
        ],
    }
    learner = learner_edition.learner_toc(toc)
    assert learner["parts"] == [{"caption": "Practice", "chapters": [{"file": "book/exercises"}]}]
    assert toc["parts"][0]["chapters"][1] == {"file": "book/instructor_guide"}  # the original is untouched


@pytest.mark.parametrize(("value", "learner"), [("", False), ("0", False), ("1", True), ("yes", True)])
def test_learner_edition_switch(value, learner):
    assert learner_edition.is_learner_edition({"MHA_HIDE_SOLUTIONS": value}) is learner


# --- the page's data ---------------------------------------------------------------------------


def test_site_data_rebuilds_every_preset():
    data = json.loads(json.dumps(practice_pages.site_data()))
    rebuilt = {}
    for record in data["presets"]:
        fields = {k: v for k, v in record.items() if k not in ("variant", "mla")}
        cls = mk.LatentAttentionConfig if record["mla"] else mk.AttentionConfig
        rebuilt[record["name"]] = cls(**fields)
    assert rebuilt == dict(mk.PRESETS)
    assert data["dtype_bits"] == mk.DTYPE_BITS


def _exercise_sources():
    """The judge's question specs, where the exercises' diagnostic hints live (outside the kernel): the
    shared helpers in mha_course/judge/ and each assignment's solutions/<assignment>/grading_questions.py."""
    files = [*(REPO_ROOT / "mha_course" / "judge").glob("*.py"), *(REPO_ROOT / "solutions").glob("*/grading_questions.py")]
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(files))


def test_drill_hints_are_the_exercises_hints():
    """Every hint the drills give is one an exercise's test cell gives, word for word."""
    sources = _exercise_sources()
    missing = [hint for spec in practice_pages.DRILL_HINTS.values()
               for _, hint in spec.get("ratios", []) + spec.get("wrong", []) if hint not in sources]
    assert not missing, f"hints no exercise gives (copy the exercise's words, or drop the hint): {missing}"


def test_drill_hint_keys_are_ratios():
    for kind, spec in practice_pages.DRILL_HINTS.items():
        for key, _ in spec.get("ratios", []):
            top, _, bottom = key.partition("/")
            assert top.isdigit() and (not bottom or bottom.isdigit() or bottom in ("L", "B", "g")), (kind, key)
            if bottom.isdigit():
                Fraction(int(top), int(bottom))


# --- flashcards from follow-up chains ----------------------------------------------------------

CHAIN = """(fixture-chain)=
## Follow-up chain

One sentence of lead-in.

:::{admonition} [M] Q2. How big is the cache per token?
:class: dropdown followup

**Strong answer.** It is {glue:text}`per_token` for $h_{kv} = 8$: it counts the key-value heads, in bf16.

**Listening for.**
- cache scales with h_kv, not h: "counts the key-value heads"
- precision stated: "in bf16"

**Trap.** Counting query heads.
:::

:::{admonition} Not a card
:class: dropdown

Plain dropdown.
:::
"""


def _fixture_book(folder, with_chain):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    code = nbformat.v4.new_code_cell("glue('per_token', '320 KiB')")
    code.outputs = [nbformat.v4.new_output(
        "display_data", data={"application/papermill.record/text/plain": "'320 KiB'"},
        metadata={"scrapbook": {"name": "per_token", "mime_prefix": "application/papermill.record/"}})]
    nb.cells = [nbformat.v4.new_markdown_cell("# Fixture chapter"), code,
                nbformat.v4.new_markdown_cell(CHAIN if with_chain else "## No chain here\n\nText.")]
    nbformat.write(nb, folder / "chapter.ipynb")
    (folder / "index.md").write_text("# Fixture\n\n```{toctree}\nchapter\n```\n", encoding="utf-8")
    (folder / "conf.py").write_text(
        "extensions = ['myst_nb', 'website.ext.followup_cards']\n"
        "myst_enable_extensions = ['colon_fence', 'dollarmath']\n"
        "nb_execution_mode = 'off'\n"
        "root_doc = 'index'\n",
        encoding="utf-8",
    )


def _build_fixture(tmp_path, with_chain):
    source, out = tmp_path / "src", tmp_path / "html"
    source.mkdir()
    _fixture_book(source, with_chain)
    # run in the repository: python -m puts it on the path, so the extension imports as the book's do
    result = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", str(source), str(out)],
                            capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    cards = json.loads((out / "_static" / "mha-flashcards.json").read_text(encoding="utf-8"))
    script = (out / "_static" / "mha-flashcards.js").read_text(encoding="utf-8")
    assert script.startswith("window.MHA_FLASHCARDS = ")
    return cards


def test_followup_admonitions_become_cards(tmp_path):
    cards = _build_fixture(tmp_path, with_chain=True)
    assert len(cards) == 1, cards  # the plain dropdown is not a card
    card = cards[0]
    assert card["tag"] == "M" and card["doc"] == "chapter" and card["page"] == "Fixture chapter"
    assert card["question_text"] == "Q2. How big is the cache per token?"
    assert "[M]" not in card["question_html"] and "Q2. How big is the cache per token?" in card["question_html"]
    assert card["url"] == "chapter.html#fixture-chain" or card["url"] == "chapter.html#follow-up-chain"
    assert "320 KiB" in card["answer_html"]  # the glued number, resolved
    assert "Strong answer." in card["answer_html"] and "Trap." in card["answer_html"]
    assert "math" in card["answer_html"]  # the formula stays for MathJax
    assert card["rubric"] == [{"beat": "cache scales with h_kv, not h", "anchor": "counts the key-value heads"},
                              {"beat": "precision stated", "anchor": "in bf16"}]
    rubric_html = card["answer_html"].split("Listening for.", 1)[1]
    assert 'class="mha-rubric' in rubric_html and rubric_html.count("<li>") == 2  # the list, styled, in the card


def test_a_book_without_chains_has_no_cards(tmp_path):
    assert _build_fixture(tmp_path, with_chain=False) == []


# --- accessibility repairs ---------------------------------------------------------------------


def test_animation_slider_gets_a_label_once():
    body = '<input id="_anim_slider12ab" type="range"\n  class="anim-slider">'
    repaired = accessible_pages.repair(body)
    assert repaired == '<input aria-label="Animation frame" id="_anim_slider12ab" type="range"\n  class="anim-slider">'
    assert accessible_pages.repair(repaired) == repaired  # a labelled slider is left alone
    assert accessible_pages.repair('<input id="other">') == '<input id="other">'


def test_animation_frame_gets_alt_text():
    repaired = accessible_pages.repair('<img id="_anim_img9f">')
    assert repaired == f'<img alt="{accessible_pages.FRAME_ALT}" id="_anim_img9f">'
    assert accessible_pages.repair('<img alt="x" id="_anim_img9f">') == '<img alt="x" id="_anim_img9f">'


def test_bibliography_entries_become_list_items():
    body = '<div role="list" class="citation-list"><div class="citation" id="x" role="doc-biblioentry">'
    assert accessible_pages.repair(body) == '<div role="list" class="citation-list"><div class="citation" id="x" role="listitem">'


def test_page_text_for_search_from_disk_has_readable_math():
    from docutils.core import publish_doctree

    doctree = publish_doctree("Scale by :math:`\\sqrt{d_h}` here.\n\n.. math:: h \\cdot n^2\n\n.. raw:: html\n\n   <div>widget</div>\n")
    assert search_text.readable_page_text(doctree) == "Scale by √d_h here. h · n²"


# --- buttons in a real (small) build -----------------------------------------------------------


def _build_with_theme(tmp_path, url):
    source, out = tmp_path / "src", tmp_path / "html"
    source.mkdir(parents=True)
    (source / "index.rst").write_text("Fixture\n=======\n\nText.\n", encoding="utf-8")
    (source / "conf.py").write_text(
        "extensions = ['website.ext.site_buttons']\n"
        "html_theme = 'sphinx_book_theme'\n"
        # what jupyter-book passes when _config.yml has no repository block
        "html_theme_options = {'repository_url': 'https://github.com/executablebooks/jupyter-book',"
        " 'use_repository_button': True, 'use_issues_button': True}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != site_buttons.ENV_URL}
    if url:
        env[site_buttons.ENV_URL] = url
    result = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", str(source), str(out)],
                            capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    return (out / "index.html").read_text(encoding="utf-8")


def test_buttons_appear_only_with_a_repository(tmp_path):
    page = _build_with_theme(tmp_path / "with", "https://github.com/someone/mha-book")
    assert 'href="https://github.com/someone/mha-book"' in page
    assert "https://github.com/someone/mha-book/issues/new" in page
    bare = _build_with_theme(tmp_path / "without", None)
    assert "github.com" not in bare


# --- the leak detector the learner-edition test uses -------------------------------------------


def test_leak_detector_finds_a_secret_however_it_is_written(tmp_path):
    import site_support

    secrets = site_support.secret_lines()
    line = sorted(secrets)[0]
    words = line.split(" ")
    highlighted = "".join(f'<span class="n">{word}</span> ' for word in words)  # a page's highlighted code
    (tmp_path / "page.html").write_text(f"<pre>{highlighted}</pre>", encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [{"source": ["x = 1\n", line + "\n"]}]}), encoding="utf-8")
    (tmp_path / "clean.html").write_text("<p>nothing here</p>", encoding="utf-8")
    (tmp_path / "glued.txt").write_text(f"x=1;{line}#end", encoding="utf-8")  # its first and last words run on
    assert site_support.leaks(tmp_path, secrets) == {"glued.txt": [line], "nb.ipynb": [line], "page.html": [line]}


def test_a_line_that_only_returns_a_name_is_no_secret():
    import site_support

    assert not site_support.is_secret("return reused")
    assert not site_support.is_secret("print(cache_bytes)")
    assert site_support.is_secret("return reused[-1] // 16")  # it computes something: a secret
    assert site_support.is_secret("params = mk.dense_decoder_params(facts)")
    assert not site_support.is_secret("pass")


# --- stored outputs in the test build ----------------------------------------------------------


def _config(patterns):
    from types import SimpleNamespace

    return SimpleNamespace(srcdir=str(REPO_ROOT)), SimpleNamespace(nb_execution_excludepatterns=list(patterns))


def test_only_a_notebook_whose_code_reads_the_edition_switch_runs_per_edition(tmp_path):
    assert stored_outputs.runs_per_edition(REPO_ROOT / "book" / "solutions.ipynb")
    assert not stored_outputs.runs_per_edition(REPO_ROOT / "book" / "notation.ipynb")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Build with MHA_HIDE_SOLUTIONS=1."), nbformat.v4.new_code_cell("1 + 1")]
    nbformat.write(nb, tmp_path / "prose.ipynb")
    assert not stored_outputs.runs_per_edition(tmp_path / "prose.ipynb")  # prose only: runs the same


def test_named_notebooks_are_not_executed(monkeypatch):
    monkeypatch.setenv("MHA_STORED_OUTPUTS", os.pathsep.join(["book/notation.ipynb", "book/references.ipynb"]))
    app, config = _config(["already/*.ipynb"])
    stored_outputs.skip_execution(app, config)
    assert config.nb_execution_excludepatterns == ["already/*.ipynb", "book/notation.ipynb", "book/references.ipynb"]


def test_without_the_variable_every_notebook_executes(monkeypatch):
    monkeypatch.delenv("MHA_STORED_OUTPUTS", raising=False)
    app, config = _config([])
    stored_outputs.skip_execution(app, config)
    assert config.nb_execution_excludepatterns == []


def test_a_notebook_that_runs_per_edition_is_refused(monkeypatch):
    monkeypatch.setenv("MHA_STORED_OUTPUTS", os.pathsep.join(["book/notation.ipynb", "book/solutions.ipynb"]))
    app, config = _config([])
    with pytest.raises(ValueError, match=r"book/solutions.ipynb read\(s\) MHA_HIDE_SOLUTIONS"):
        stored_outputs.skip_execution(app, config)
