"""Sphinx extension: search results in readable text, not raw LaTeX.

Sphinx's search page lists each hit's title from ``searchindex.js`` and a summary cut from the
page's text, in which math is still TeX source (``\\(\\sqrt{d_h}\\)``) because MathJax only
typesets it in the browser. When the build has finished this extension

* rewrites the titles in ``searchindex.js`` (``1/\\sqrt{d_h}`` becomes ``1/√d_h``), and
* writes ``_static/mha-search.js``, loaded by the search page only: a table from every formula
  on the site to its readable text, and a hook that puts that text in place of the formulas
  when the summary is cut;
* writes ``_static/mha-search-pages.js``, the readable text of every page: opened from disk
  (file://), the browser refuses the search page's requests for the pages it summarises, so
  there the summaries are cut from this text instead.

:func:`tex_to_text` does the conversion, once, in Python.
"""

import html
import json
import re
from pathlib import Path

from docutils import nodes

SYMBOLS = {
    "cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "approx": "≈",
    "ne": "≠", "neq": "≠", "to": "→", "rightarrow": "→", "leftarrow": "←", "infty": "∞",
    "ldots": "…", "dots": "…", "cdots": "⋯", "sum": "Σ", "prod": "Π", "in": "∈", "top": "⊤",
    "sim": "~", "propto": "∝", "pm": "±", "mid": "|", "lceil": "⌈", "rceil": "⌉",
    "lfloor": "⌊", "rfloor": "⌋", "langle": "⟨", "rangle": "⟩", "ell": "ℓ", "partial": "∂",
    "%": "%", "{": "{", "}": "}", "_": "_", "#": "#", "&": "&",
    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": " ", "qquad": " ", "\\": "; ",
}
GREEK = ("alpha beta gamma delta epsilon varepsilon zeta eta theta lambda mu nu xi pi rho sigma "
         "tau phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi Omega")
_GREEK_LETTERS = "αβγδεεζηθλμνξπρστφφχψωΓΔΘΛΞΠΣΦΨΩ"
SYMBOLS.update(zip(GREEK.split(), _GREEK_LETTERS))
ONE_ARGUMENT = {"text", "textrm", "textbf", "textit", "mathrm", "mathbf", "mathit", "mathsf",
                "mathtt", "mathcal", "mathbb", "operatorname", "boldsymbol", "bm", "hat", "bar",
                "tilde", "vec", "underbrace", "overbrace", "underset", "overset", "mbox"}
DROPPED = {"left", "right", "big", "Big", "bigg", "Bigg", "displaystyle", "limits", "nolimits",
           "label", "tag", "begin", "end"}
SUPERSCRIPTS = dict(zip("0123456789T⊤", "⁰¹²³⁴⁵⁶⁷⁸⁹ᵀᵀ"))
_DELIMITERS = re.compile(r"^\s*(?:\\\(|\\\[|\$\$?)(?P<tex>.*?)(?:\\\)|\\\]|\$\$?)\s*$", re.DOTALL)


_COMMAND = re.compile(r"\\([A-Za-z]+|.)", re.DOTALL)  # a backslash before a newline is a command too


class _Reader:
    """A tiny recursive reader of the TeX that the book's formulas use."""

    def __init__(self, tex):
        self.tex, self.at = tex, 0

    def group(self):
        """One argument: ``{...}``, a command, or a single character."""
        self.skip_spaces()
        if self.at >= len(self.tex):
            return ""
        if self.tex[self.at] == "{":
            self.at += 1
            return self.until("}")
        if self.tex[self.at] == "\\":
            return self.command()
        self.at += 1
        return self.tex[self.at - 1]

    def skip_spaces(self):
        while self.at < len(self.tex) and self.tex[self.at].isspace():
            self.at += 1

    def until(self, end=None):
        out = []
        while self.at < len(self.tex):
            char = self.tex[self.at]
            if char == end:
                self.at += 1
                break
            out.append(self.token())
        return "".join(out)

    def token(self):
        char = self.tex[self.at]
        if char == "\\":
            return self.command()
        if char in "_^":
            self.at += 1
            arg = self.group()
            if char == "^" and arg in SUPERSCRIPTS:
                return SUPERSCRIPTS[arg]
            return char + (arg if len(arg) == 1 or arg.replace("_", "").isalnum() else f"({arg})")
        if char == "{":
            self.at += 1
            return self.until("}")
        self.at += 1
        return " " if char in "&~" else char

    def command(self):
        match = _COMMAND.match(self.tex, self.at)
        if match is None:  # a lone backslash at the end of the formula
            self.at = len(self.tex)
            return ""
        self.at = match.end()
        name = match.group(1)
        if name == "frac" or name == "dfrac" or name == "tfrac":
            top, bottom = self.group(), self.group()
            return f"{_wrap(top)}/{_wrap(bottom)}"
        if name == "sqrt":
            if self.tex.startswith("[", self.at):
                self.at = self.tex.index("]", self.at) + 1
            return "√" + _wrap(self.group())
        if name in ONE_ARGUMENT:
            text = self.group()
            if name in ("underbrace", "overbrace"):
                self.skip_spaces()
                if self.tex.startswith(("_", "^"), self.at):
                    self.at += 1
                    self.group()
            return text
        if name in DROPPED:
            if name in ("begin", "end", "label", "tag"):
                self.group()
            elif name in ("left", "right", "big", "Big", "bigg", "Bigg") and self.at < len(self.tex):
                self.at += 1 if self.tex[self.at] != "\\" else 0
                return self.tex[self.at - 1] if self.tex[self.at - 1] not in "." else ""
            return ""
        return SYMBOLS.get(name, name)


def _wrap(text):
    text = text.strip()
    return text if re.fullmatch(r"[\w.·√⁰¹²³⁴⁵⁶⁷⁸⁹ᵀ]+", text) else f"({text})"


def tex_to_text(tex):
    """Readable text for a TeX formula, with or without its ``\\( \\)`` delimiters.

    >>> tex_to_text(r"\\(\\sqrt{d_h}\\)")
    '√d_h'
    >>> tex_to_text(r"L \\cdot 2 \\cdot h_{kv} \\cdot d_h \\cdot b")
    'L · 2 · h_kv · d_h · b'
    """
    match = _DELIMITERS.match(tex)
    body = match.group("tex") if match else tex
    text = _Reader(body).until()
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([,.;:)])", r"\1", text)


_MATH_ELEMENT = re.compile(
    r'<(?P<tag>span|div)\b[^>]*class="[^"]*\bmath\b[^"]*"[^>]*>(?P<tex>.*?)</(?P=tag)>', re.DOTALL
)


def formulas_in(page_html):
    """The TeX source of every math element of a built page (HTML entities decoded)."""
    return {html.unescape(match.group("tex")).strip() for match in _MATH_ELEMENT.finditer(page_html)}


def readable_titles(index):
    """A search index (the dict in searchindex.js) with TeX in its titles made readable."""
    def fix(title):
        return tex_to_text(title) if "\\" in title else title

    index = dict(index)
    index["titles"] = [fix(title) for title in index.get("titles", [])]
    for key in ("alltitles",):
        index[key] = {fix(title): where for title, where in index.get(key, {}).items()}
    return index


def rewrite_search_index(path):
    text = path.read_text(encoding="utf-8")
    prefix, suffix = "Search.setIndex(", ")"
    if not (text.startswith(prefix) and text.rstrip().endswith(suffix)):
        raise ValueError(f"{path} is not a Sphinx search index (expected {prefix}...{suffix})")
    index = json.loads(text[len(prefix):text.rstrip().rfind(suffix)])
    path.write_text(prefix + json.dumps(readable_titles(index), separators=(",", ":")) + suffix,
                    encoding="utf-8")


SEARCH_HOOK = """
(function () {
  // Replace each formula by its readable text before Sphinx cuts the result's summary.
  function install() {
    const original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math").forEach(function (el) {
        const tex = el.textContent.trim();
        el.textContent = Object.prototype.hasOwnProperty.call(MHA_SEARCH_MATH, tex) ? MHA_SEARCH_MATH[tex] : tex;
      });
      return original(doc.documentElement.outerHTML, anchor);
    };
  }
  // searchtools.js comes after this script: hook in once the page's scripts have run.
  if (typeof Search !== "undefined") install();
  else document.addEventListener("DOMContentLoaded", install);

  // From disk the browser fetches no page: answer with the page's text written at build time.
  if (window.location.protocol === "file:" && window.MHA_SEARCH_PAGES) {
    const root = new URL(document.documentElement.dataset.content_root || "./", window.location.href).href;
    const fetchPage = window.fetch.bind(window);
    window.fetch = function (resource, options) {
      const url = new URL(String(resource), window.location.href).href;
      const docname = url.startsWith(root) ? url.slice(root.length).replace(/\\.html$/, "") : null;
      if (docname !== null && Object.prototype.hasOwnProperty.call(window.MHA_SEARCH_PAGES, docname)) {
        const main = document.createElement("div");
        main.setAttribute("role", "main");
        main.textContent = window.MHA_SEARCH_PAGES[docname];
        return Promise.resolve(new Response(main.outerHTML, {headers: {"Content-Type": "text/html"}}));
      }
      return fetchPage(resource, options);
    };
  }
})();
"""


def readable_page_text(doctree):
    """A page's text with every formula in readable form (for summaries cut from disk).

    Changes ``doctree`` in place: give it a copy of its own. Sphinx's ``env.get_doctree`` unpickles a new one on
    every call (Sphinx 7.4), so :func:`write_page_texts` copies nothing; a deep copy of each page was 4 % of the
    site build's CPU time (cProfile, 2026-12-07)."""
    for node in list(doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))):
        node.replace_self(nodes.Text(" " + tex_to_text(node.astext()) + " "))
    for node in list(doctree.findall(nodes.raw)):
        node.parent.remove(node)
    return re.sub(r"\s+", " ", doctree.astext()).strip()


def write_page_texts(app):
    texts = {docname: readable_page_text(app.env.get_doctree(docname)) for docname in sorted(app.env.found_docs)}
    script = "window.MHA_SEARCH_PAGES = " + json.dumps(texts, ensure_ascii=False) + ";\n"
    (Path(app.outdir) / "_static" / "mha-search-pages.js").write_text(script, encoding="utf-8")


def write_search_text(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    index = outdir / "searchindex.js"
    if index.exists():
        rewrite_search_index(index)
    formulas = set()
    for page in outdir.rglob("*.html"):
        if "_static" not in page.relative_to(outdir).parts:
            formulas |= formulas_in(page.read_text(encoding="utf-8"))
    table = {tex: tex_to_text(tex) for tex in sorted(formulas)}
    script = "const MHA_SEARCH_MATH = " + json.dumps(table, ensure_ascii=False, indent=0) + ";\n" + SEARCH_HOOK
    (outdir / "_static").mkdir(exist_ok=True)
    (outdir / "_static" / "mha-search.js").write_text(script, encoding="utf-8")
    write_page_texts(app)


def add_hook(app, pagename, templatename, context, doctree):
    if pagename == "search":
        app.add_js_file("mha-search-pages.js", priority=900)
        app.add_js_file("mha-search.js", priority=901)


def setup(app):
    app.connect("html-page-context", add_hook)
    app.connect("build-finished", write_search_text)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
