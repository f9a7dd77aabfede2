"""The book's chapters as _toc.yml lists them, for the tests that read the book."""

import json
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent


def toc_entries(toc_path=REPO_ROOT / "_toc.yml"):
    """Return ``(docname, numbered)`` for every page in _toc.yml, in reading order.

    ``docname`` is the path without suffix (``"book/first_principles"``);
    ``numbered`` says whether the page sits in a part with ``numbered: true``.
    """
    toc = yaml.safe_load(Path(toc_path).read_text(encoding="utf-8"))
    entries = [(toc["root"], False)]

    def walk(items, numbered):
        for item in items:
            if "file" in item:
                entries.append((item["file"], numbered))
            walk(item.get("sections", []), numbered)

    for part in toc.get("parts", []):
        walk(part.get("chapters", []), bool(part.get("numbered", False)))
    walk(toc.get("chapters", []), bool(toc.get("defaults", {}).get("numbered", False)))
    return entries


def toc_docnames():
    """Docnames of every page in _toc.yml, root first."""
    return [docname for docname, _ in toc_entries()]


def source_of(docname):
    """The source file of a docname (.ipynb or .md), or None if it does not exist yet."""
    for suffix in (".ipynb", ".md"):
        path = REPO_ROOT / f"{docname}{suffix}"
        if path.exists():
            return path
    return None


#: The parts whose chapters teach (each ends with a follow-up chain); Practice, Reference and the
#: instructors' part do not.
CONTENT_PARTS = ("Multi-head attention", "What interviewers ask next", "Serving in 2026",
                 "Long context, kernels and numerics", "Serving at scale", "In the interview")


def content_chapters(toc_path=REPO_ROOT / "_toc.yml"):
    """File stems of the chapters in :data:`CONTENT_PARTS`, in reading order."""
    toc = yaml.safe_load(Path(toc_path).read_text(encoding="utf-8"))
    return [item["file"].split("/")[-1] for part in toc["parts"] if part["caption"] in CONTENT_PARTS
            for item in part["chapters"]]


def cells(chapter):
    """The cells of ``book/<chapter>.ipynb``."""
    return json.loads((REPO_ROOT / "book" / f"{chapter}.ipynb").read_text(encoding="utf-8"))["cells"]


def printed(chapter):
    """Everything the chapter's code cells printed (their stored stream outputs), in order."""
    return "".join("".join(o.get("text", "")) for c in cells(chapter) if c["cell_type"] == "code"
                   for o in c.get("outputs", []) if o.get("output_type") == "stream")


def markdown(chapter):
    """The sources of the chapter's markdown cells, in order."""
    return ["".join(c["source"]) for c in cells(chapter) if c["cell_type"] == "markdown"]


def png_figures(chapter):
    """How many figures ``book/<chapter>.ipynb`` stores; each must be a PNG with alt text (no SVG)."""
    figures = 0
    for cell in cells(chapter):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            assert "image/svg+xml" not in data, f"book/{chapter}.ipynb: SVG figure"
            if "image/png" in data:
                figures += 1
                alt = cell["metadata"].get("mystnb", {}).get("image", {}).get("alt", "")
                assert len(alt) > 40, f"book/{chapter}.ipynb: figure without alt text"
    return figures
