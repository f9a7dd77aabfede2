"""The chapters as the browser edition runs them: a copy of each chapter made for JupyterLite.

A chapter is written for the book (MyST markdown, ``myst_nb.glue``, figures from ``mha_kit.plots``),
and the browser's kernel has neither myst_nb nor matplotlib. :func:`browser_copy` makes a copy,
from the chapter with its stored outputs (the outputs nbval checks against a fresh run), that runs
there and still shows everything:

* a code cell tagged ``remove-cell`` (the article's checks, or numbers the text glues) stays, its code
  and outputs hidden (JupyterLab's ``source_hidden``): later cells may use what it defines (issue 36:
  *Continuous batching* defines ``long_prompt`` in one); a markdown cell so tagged is left out;
* a first code cell defines ``glue`` as showing its value (``display=False``: nothing), so that
  the chapter's cells run unchanged; the imports of ``myst_nb``, ``mha_kit.plots``,
  ``mha_kit.plots_serving`` and ``matplotlib`` and ``%config InlineBackend`` lines are dropped;
* a cell that draws a figure keeps the statements that do not draw (they may print, or compute
  what later cells use) and is followed by a markdown cell with the figure as the book shows it
  (its stored PNG, as an attachment, with the chapter's alt text) and the drawing code, not run;
* the markdown becomes plain Markdown that JupyterLab renders: glued numbers are written in from
  the stored outputs, citations as (Author et al., year), ``{doc}`` as a link to that chapter's
  copy (or its title), admonitions as quotes, dropdowns as ``<details>``.

A chapter the browser cannot run (it starts a subprocess, or imports what the browser lacks) is
left out, with the reason :func:`browser_problem` gives; the site then shows no button for it
(website/lite/buttons.py asks the same function).
"""

import ast
import copy
import functools
import json
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Modules whose figures are replaced by their stored pictures: matplotlib's, and every ``mha_kit.plots*``
#: module (``plots``, ``plots_serving``, ``plots_context`` ...), see :func:`is_plot_module`.
PLOT_MODULES = ("matplotlib.pyplot",)
#: Imports dropped from the browser copies (their names are handled: glue is defined, plots replaced).
DROPPED_IMPORTS = ("myst_nb", "matplotlib", "mha_kit.plots", "mha_kit.plots_serving")
#: Imports the browser has but cannot run: no processes, no sockets there.
CANNOT_RUN = {"subprocess", "multiprocessing", "socket", "ssl", "ctypes", "sqlite3"}
#: The markdown of the first cell of every copy.
INTRO = ("*This is the browser edition of the chapter: it runs in your browser (JupyterLite), with "
         "`mha_kit` and numpy 1.25 and no server. Figures are shown as the book draws them "
         "(matplotlib is not in the browser), and numbers the book quotes are written into the text. "
         "Your changes are kept in this browser only: **File ▸ Download** saves a copy.*")
GLUE_CELL = '''# The book names values for its text with myst_nb's glue; here glue only shows them.
def glue(name, value, display=True):
    if display:
        from IPython.display import display as show
        show(value)'''


# --- which chapters run in the browser ---------------------------------------------------------------


def _imports(source):
    try:
        tree = parse_python(_python(source))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


@functools.lru_cache(maxsize=8192)
def parse_python(python):
    """The ``ast`` tree of the code ``python`` (a cell's :func:`_python`), parsed once per text in a process:
    the build's plan and each copy read every chapter's cells several times. Shared: never change it."""
    return ast.parse(python)


def _python(source):
    """A cell's source without IPython magics and shell escapes (``%config ...``, ``!ls``)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _kit_calls(nb):
    """The names of mha_kit a chapter uses: ``mk.name`` (any alias of ``mha_kit``) and ``from mha_kit import name``."""
    aliases, names = set(), set()
    trees = [parse_python(_python(cell["source"])) for cell in code_cells(nb)]
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == "mha_kit" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "mha_kit" and node.level == 0:
            names |= {a.name for a in node.names}
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases | {"mha_kit"}:
            names.add(node.attr)
    return names


def browser_problem(notebook, available=None, kit_needs=None):
    """Why the chapter at ``notebook`` (a path or a notebook dict) cannot run in the browser, or None.

    ``available(module)``: whether the browser can import a module (website.lite.kernel.available);
    None checks only what the browser can import but not run (:data:`CANNOT_RUN`). ``kit_needs``:
    ``{mha_kit name: [packages the browser lacks]}`` (website.lite.kernel.kit_needs), for a chapter that
    calls such a function (bf16 and FP8 need ``ml_dtypes``).
    """
    nb = read(notebook) if isinstance(notebook, (str, Path)) else notebook
    problem = _import_problem(nb, available)
    if problem is None and kit_needs:
        needed = sorted(_kit_calls(nb) & set(kit_needs))
        if needed:
            return (f"it calls mha_kit.{needed[0]}, which needs {', '.join(kit_needs[needed[0]])}, "
                    "which the browser edition's kernel does not have")
    return problem


def _import_problem(nb, available):
    for cell in code_cells(nb):
        modules = _imports(cell["source"])
        if modules is None:
            return "a code cell is not Python"
        for module in modules:
            if module.startswith(DROPPED_IMPORTS):
                continue
            top = module.split(".")[0]
            if top in CANNOT_RUN:
                return f"it imports {module}, which cannot run in a browser"
            if available is not None and top not in ("mha_kit", "mha_course") and not available(module):
                return f"it imports {module}, which the browser edition's kernel does not have"
            if top == "mha_course":
                return f"it imports {module} (the course's tooling, for the desktop)"
    return None


def read(path):
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        cell["source"] = _text(cell["source"])
    return nb


def _text(value):
    return "".join(value) if isinstance(value, list) else value


def code_cells(nb):
    """Every code cell the copy runs: ``remove-cell`` ones too (they stay, hidden)."""
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


#: Metadata of a kept ``remove-cell`` code cell: JupyterLab shows it collapsed, code and outputs.
HIDDEN = {"jupyter": {"source_hidden": True, "outputs_hidden": True}, "tags": ["remove-cell"]}


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


# --- glued values, citations, links -----------------------------------------------------------------


GLUE_MIME = "application/papermill.record/text/plain"


def glued_values(nb):
    """``{name: text}`` of the values the chapter's cells glued (their stored outputs)."""
    values = {}
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = _text(out.get("data", {}).get(GLUE_MIME, ""))
            if name and text:
                try:
                    value = ast.literal_eval(text)
                    values[name] = value if isinstance(value, str) else text
                except (ValueError, SyntaxError):
                    values[name] = text
    return values


_BIB_ENTRY = re.compile(r"@\w+\{([^,\s]+),(.*?)\n\}", re.S)


def _bib_field(body, name):
    match = re.search(rf"\b{name}\s*=\s*\{{(.*?)\}},?\s*$", body, re.M | re.S)
    return re.sub(r"[{}]", "", match.group(1)).strip() if match else ""


def citation_labels(bib=REPO_ROOT / "references.bib"):
    """``{key: "Author et al., year"}`` from references.bib (as the book's author-year style)."""
    labels = {}
    for key, body in _BIB_ENTRY.findall(Path(bib).read_text(encoding="utf-8")):
        authors = [a.strip() for a in _bib_field(body, "author").split(" and ") if a.strip()]
        first = authors[0].split(",")[0].strip() if authors else key
        first = re.sub(r"\\.\s*", "", first)  # {\L}ukasz and the like: the letter without its accent command
        names = first if len(authors) == 1 else f"{first} and {authors[1].split(',')[0].strip()}" if len(
            authors) == 2 else f"{first} et al."
        year = _bib_field(body, "year")
        labels[key] = f"{names}, {year}" if year else names
    return labels


# --- MyST to Markdown ---------------------------------------------------------------------------------

_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*)$")
_LABEL = re.compile(r"^\s*\([\w:.-]+\)=\s*$")
_ADMONITIONS = {"note": "Note", "tip": "Tip", "important": "Important", "warning": "Warning", "error": "Error",
                "hint": "Hint", "seealso": "See also", "caution": "Caution", "attention": "Attention"}


class Context:
    """What the conversion needs: glued values, citation labels, and the chapters' titles and copies."""

    def __init__(self, glued=None, citations=None, titles=None, copies=()):
        self.glued = glued or {}
        self.citations = citations or {}
        self.titles = titles or {}  # docname ("worked_example") -> title
        self.copies = set(copies)  # docnames with a browser copy beside this one


def _role(match, context):
    name, content = match.group(1), match.group(2)
    if name.startswith("glue"):
        key = content.split(":")[0].strip()
        return str(context.glued.get(key, content))
    if name.startswith("cite"):
        parts = []
        for item in content.split(","):
            key, _, post = item.strip().partition("{")
            label = context.citations.get(key.strip(), key.strip())
            parts.append(f"{label}, {post.rstrip('}')}" if post else label)
        return f"({'; '.join(parts)})"
    if name == "doc":
        text, target = _text_and_target(content)
        doc = target.rsplit("/", 1)[-1]
        title = text or context.titles.get(doc, doc.replace("_", " "))
        return f"[{title}]({doc}.ipynb)" if doc in context.copies else f"*{title}*"
    if name in ("ref", "numref", "term", "abbr"):
        text, target = _text_and_target(content)
        return text or target
    if name == "math":
        return f"${content}$"
    return content


def _text_and_target(content):
    match = re.match(r"^(.*?)\s*<([^>]+)>$", content, re.S)
    return (match.group(1).strip(), match.group(2).strip()) if match else ("", content.strip())


def inline(text, context):
    """Roles replaced in a stretch of markdown."""
    return _ROLE.sub(lambda m: _role(m, context), text)


def _quote(text):
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())


def _directive(name, arg, options, body, context):
    body = myst_to_markdown(body, context).strip()
    classes = options.get("class", "").split()
    if name == "admonition" and "dropdown" in classes or name == "dropdown":
        return f"<details>\n<summary>{inline(arg, context) or 'Details'}</summary>\n\n{body}\n\n</details>"
    if name == "admonition" or name in _ADMONITIONS:
        title = inline(arg, context) or _ADMONITIONS.get(name, name.title())
        return _quote(f"**{title}**\n\n{body}")
    if name in ("grid", "glossary"):
        return body
    if name == "grid-item-card":
        return f"**{inline(arg, context)}**\n\n{body}" if arg else body
    if name == "kv-calculator":
        return "*The live KV-cache calculator is on this chapter's page in the book.*"
    if name == "bibliography":
        return "*The bibliography is on this page in the book.*"
    if name == "math":
        return f"$$\n{body}\n$$"
    return body


def myst_to_markdown(text, context):
    """Plain Markdown for JupyterLab from a MyST markdown cell (roles, directives, labels)."""
    lines, out, i = text.splitlines(), [], 0
    code_fence = None
    while i < len(lines):
        line = lines[i]
        match = _FENCE.match(line) if code_fence is None else None
        if match is None:
            stripped = line.strip()
            if code_fence is None and re.match(r"^(`{3,}|~{3,})", stripped):
                code_fence = stripped[:3]
            elif code_fence is not None and stripped.startswith(code_fence):
                code_fence = None
            if code_fence is None and not stripped.startswith(("```", "~~~")) and _LABEL.match(line):
                i += 1
                continue
            out.append(line if code_fence is not None or stripped.startswith(("```", "~~~")) else inline(line, context))
            i += 1
            continue
        fence, options, body = match.group("fence"), {}, []
        i += 1
        while i < len(lines) and _OPTION.match(lines[i]):
            key, value = _OPTION.match(lines[i]).groups()
            options[key] = value
            i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        out.append(_directive(match.group("name"), match.group("arg").strip(), options, "\n".join(body), context))
    return "\n".join(out)


# --- figures --------------------------------------------------------------------------------------------


def is_plot_module(name):
    """Whether ``name`` (dotted) draws figures: matplotlib's pyplot or a ``mha_kit.plots*`` module."""
    return name in PLOT_MODULES or re.fullmatch(r"mha_kit\.plots\w*", name) is not None


def _plot_names(nb):
    """The names a chapter binds to plotting modules (``plots``, ``plt``)."""
    names = set()
    for cell in code_cells(nb):
        try:
            tree = parse_python(_python(cell["source"]))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.asname or a.name for a in node.names if is_plot_module(a.name)}
            elif isinstance(node, ast.ImportFrom) and node.module in ("mha_kit", "matplotlib"):
                names |= {a.asname or a.name for a in node.names if is_plot_module(f"{node.module}.{a.name}")}
    return names


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _comprehension_names(node):
    """The names a statement's comprehensions bind for themselves (``k, v`` in ``{k: v for k, v in items}``):
    local to the comprehension, so neither a use nor a binding of the same name outside it."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, _COMPREHENSIONS):
            names |= {t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
    return names


def _reads(node):
    """The names ``node`` reads from its surroundings: binding a name afresh is not a read (``k += 1`` is), and a
    comprehension's own names are read inside it only (its first iterable is evaluated outside)."""
    reads = set()

    def visit(n, local):
        if isinstance(n, _COMPREHENSIONS):
            inner = local | {t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
            for i, generator in enumerate(n.generators):
                visit(generator.iter, local if i == 0 else inner)
                for condition in generator.ifs:
                    visit(condition, inner)
            for part in (n.key, n.value) if isinstance(n, ast.DictComp) else (n.elt,):
                visit(part, inner)
            return
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store) and n.id not in local:
            reads.add(n.id)
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id not in local:
            reads.add(n.target.id)
        for child in ast.iter_child_nodes(n):
            visit(child, local)

    visit(node, frozenset())
    return reads


def _uses(node, names):
    return bool(_reads(node) & names)


def _bound(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - \
        _comprehension_names(node)


def _without_dropped(stmt):
    """An import statement less the modules of :data:`DROPPED_IMPORTS` (None: nothing left)."""
    def dropped(name):
        return name == "glue" and isinstance(stmt, ast.ImportFrom) or name.startswith(DROPPED_IMPORTS)

    if isinstance(stmt, ast.Import):
        names = [a for a in stmt.names if not dropped(a.name)]
    elif stmt.level == 0 and stmt.module.startswith(DROPPED_IMPORTS):
        names = []
    else:
        names = [a for a in stmt.names if not dropped(f"{stmt.module}.{a.name}")]
    if len(names) == len(stmt.names):
        return stmt
    return None if not names else type(stmt)(**{**stmt.__dict__, "names": names})


def split_drawing(source, tainted):
    """``(kept source, drawing source)`` of a code cell: the statements that draw (they use a plotting
    name, or a name bound by a drawing statement) and the rest, less the dropped imports.
    ``tainted`` (the plotting names) grows by the names that drawing statements bind, and loses those a
    statement that does not draw binds again; a comprehension's own names are neither (a figure cell's
    ``for k in ...`` does not make a later cell's ``{k: ... for k in ...}`` a drawing)."""
    python = _python(source)
    lines = python.splitlines()
    kept, drawing = [], []
    for stmt in parse_python(python).body:
        start = stmt.lineno - 1 - _comment_lines(lines, stmt.lineno)
        text = ("\n" if start > 0 and not lines[start - 1].strip() else "") + "\n".join(lines[start:stmt.end_lineno])
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            rest = _without_dropped(stmt)
            if rest is not stmt:
                kept += [text.replace(ast.get_source_segment(python, stmt), ast.unparse(rest))] if rest else []
                continue
        if _uses(stmt, tainted):
            tainted |= _bound(stmt)
            drawing.append(text)
        else:
            tainted -= _bound(stmt)  # a name this statement binds no longer holds what a drawing made
            kept.append(text)
    return _lines(kept), _lines(drawing)


def _lines(parts):
    return re.sub(r"\n{3,}", "\n\n", "\n".join(parts)).strip()


def _comment_lines(lines, lineno):
    """How many comment lines sit right above line ``lineno`` (1-based): they go with the statement."""
    count = 0
    while lineno - 2 - count >= 0 and lines[lineno - 2 - count].lstrip().startswith("#"):
        count += 1
    return count


def _figure_cell(cell, drawing):
    """The markdown cell that shows a figure cell's stored PNG(s) and its drawing code."""
    alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt") or "figure from the book"
    attachments, pictures = {}, []
    for index, out in enumerate(o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})):
        name = f"figure{index + 1}.png"
        attachments[name] = {"image/png": _text(out["data"]["image/png"]).replace("\n", "")}
        pictures.append(f"![{alt}](attachment:{name})")
    code = f"\n\n<details>\n<summary>The code that draws it (not run here)</summary>\n\n```python\n{drawing}\n```\n\n</details>"
    text = "*The figure as the book draws it with matplotlib, which the browser edition does not have:*\n\n"
    return {"cell_type": "markdown", "metadata": {}, "attachments": attachments,
            "source": text + "\n\n".join(pictures) + (code if drawing else "")}


# --- the copy ------------------------------------------------------------------------------------------


def _code(source, outputs=(), metadata=None):
    return {"cell_type": "code", "metadata": metadata or {}, "execution_count": None,
            "outputs": list(outputs), "source": source}


def _kept_outputs(cell):
    """A code cell's stored outputs, less glue records and pictures (shown in their own cell)."""
    kept = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if GLUE_MIME in data or "image/png" in data:
            continue
        out = copy.deepcopy(out)
        if out.get("output_type") == "execute_result":
            out["execution_count"] = None
        kept.append(out)
    return kept


def browser_copy(nb, context):
    """The chapter ``nb`` (a notebook dict, sources as text) as the browser edition runs it."""
    context.glued = {**glued_values(nb), **context.glued}
    tainted = _plot_names(nb)
    cells = [{"cell_type": "markdown", "metadata": {}, "source": INTRO}, _code(GLUE_CELL)]
    for cell in nb["cells"]:
        if "remove-cell" in _tags(cell):
            if cell["cell_type"] == "code" and split_drawing(cell["source"], tainted)[0]:
                cells.append(_code(split_drawing(cell["source"], tainted)[0], [], copy.deepcopy(HIDDEN)))
            continue
        if cell["cell_type"] == "markdown":
            cells.append({"cell_type": "markdown", "metadata": {}, "source": myst_to_markdown(cell["source"], context)})
            continue
        if cell["cell_type"] != "code":
            continue
        kept, drawing = split_drawing(cell["source"], tainted)
        pictures = any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
        if kept:
            cells.append(_code(kept, _kept_outputs(cell)))
        if pictures or drawing:
            cells.append(_figure_cell(cell, drawing))
    metadata = {"kernelspec": {"display_name": "Python (XPython)", "language": "python", "name": "xpython"},
                "language_info": {"name": "python"}}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def title_of(nb):
    """The chapter's title: its first ``# `` heading."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            match = re.search(r"^# (.+)$", cell["source"], re.M)
            if match:
                return match.group(1).strip()
    return ""


def write(nb, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for index, cell in enumerate(nb["cells"]):
        cell.setdefault("id", f"cell-{index}")
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
