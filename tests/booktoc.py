"""The book's chapters as _toc.yml lists them, for the tests that read the book."""

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
