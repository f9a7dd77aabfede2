"""A chapter's stored outputs as its tests read them: the values its cells glued and the lines a cell printed.

Standard library only, so a chapter test that reads outputs through it still runs in ``make test-numpy-floor``
(tests/numpy_floor.py admits this module; tests/test_lite.py checks that it stays standard library only).
"""
import functools
import json
import re
from pathlib import Path

BOOK = Path(__file__).resolve().parent.parent / "book"
GLUE_TEXT = "application/papermill.record/text/plain"


def notebook(name):
    """The chapter ``book/<name>.ipynb`` as a dict, read once per version of the file in a process (the
    chapter tests ask for the same chapters again and again: 54 notebooks of up to 2 MB). The dict is
    shared: read it, never change it."""
    path = BOOK / f"{name}.ipynb"
    stat = path.stat()
    return _notebook(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _notebook(path, mtime_ns, size):
    return json.loads(path.read_text(encoding="utf-8"))


def book_labels():
    """Every ``(label)=`` anchor in the book's chapters: a test that checks its section's ``{ref}`` links resolve."""
    labels = set()
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in notebook(path.stem)["cells"]:
            labels.update(re.findall(r"^\(([\w.-]+)\)=", "".join(cell["source"]), re.M))
    return labels


@functools.lru_cache(maxsize=None)
def bibliography():
    """The text of references.bib."""
    return (BOOK.parent / "references.bib").read_text(encoding="utf-8")


def assert_cited(text, keys):
    """Each of ``keys`` is cited in ``text`` with a locator (``{cite:p}`key{§3}```) and has an entry in references.bib."""
    for key in keys:
        assert re.search(r"`" + key + r"\{[^}]+\}`", text), key
        assert re.search(r"@\w+\{" + key + ",", bibliography()), key


def assert_cited_in_list(text, keys):
    """As :func:`assert_cited`, where a key may sit anywhere in a citation list (``{cite:p}`a{§1},key{Table 1}```)."""
    for key in keys:
        assert re.search(r"[`,]" + key + r"\{[^}]+\}", text), key
        assert re.search(r"@\w+\{" + key + ",", bibliography()), key


def assert_links(text, labels):
    """Each of ``labels`` is linked from ``text`` (``{ref}`label```) and is an anchor of the book."""
    anchors = book_labels()
    for label in labels:
        assert f"{{ref}}`{label}`" in text, label
        assert label in anchors, label


def glued(nb, key):
    """The text of the value glued under ``key`` (myst-nb's glue), without its repr quotes."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == key:
                return out["data"][GLUE_TEXT].strip("'")
    raise KeyError(key)


def _code_cell(nb, marker):
    """The first code cell whose source contains ``marker``; ValueError names a marker no code cell contains."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and marker in "".join(cell["source"]):
            return cell
    raise ValueError(f"no code cell contains {marker!r}")


def printed(nb, marker):
    """What the code cell whose source contains ``marker`` printed (stdout), as one string."""
    cell = _code_cell(nb, marker)
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def section(nb, label, end=None, kinds=("markdown", "code")):
    """The sources of one section, joined by newlines: from the cell that opens with ``(label)=`` up to, not including,
    the cell that opens with ``(end)=`` (or with ``end`` itself when it is a heading, ``## Summary``) if ``end`` is
    given, else the next cell that opens a ``##`` section with its anchor. Only cells of the given ``kinds`` count. ValueError names a label that is missing or out of order."""
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] in kinds]
    opens = [i for i, s in enumerate(sources) if s.startswith(f"({label})=")]
    if not opens:
        raise ValueError(f"no cell opens with ({label})=")
    start = opens[0]
    if end is None:
        stop = next((i for i in range(start + 1, len(sources)) if re.match(r"\([\w.-]+\)=\n## ", sources[i])),
                    len(sources))
    else:
        opener = end if end.startswith("#") else f"({end})="
        stop = next((i for i in range(start + 1, len(sources)) if sources[i].startswith(opener)), None)
        if stop is None:
            raise ValueError(f"no cell after ({label})= opens with {opener}")
    return "\n".join(sources[start:stop])


def cell_glue(nb, marker):
    """``{key: text}`` of the values glued by the code cell whose source contains ``marker``."""
    cell = _code_cell(nb, marker)
    return {o["metadata"]["scrapbook"]["name"]: o["data"][GLUE_TEXT].strip("'")
            for o in cell["outputs"] if "scrapbook" in o.get("metadata", {})}
