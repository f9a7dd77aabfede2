"""The home page's numbered chapter map follows _toc.yml: same chapters, same order, same numbers."""
import json
import re

from booktoc import REPO_ROOT, toc_entries


def _map_entries():
    """``(number, docname)`` for every numbered line of the index's chapter map."""
    notebook = json.loads((REPO_ROOT / "book" / "index.ipynb").read_text(encoding="utf-8"))
    text = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    chapter_map = text[text.index("## Chapter map"):]
    return [(int(n), doc) for n, doc in re.findall(r"^(\d+)\. \{doc\}`([\w-]+)`", chapter_map, re.M)]


def test_chapter_map_numbers_the_numbered_parts_in_toc_order():
    numbered = [docname.removeprefix("book/") for docname, is_numbered in toc_entries() if is_numbered]
    assert _map_entries() == list(enumerate(numbered, start=1))


def test_chapter_map_links_every_page_of_the_book():
    notebook = json.loads((REPO_ROOT / "book" / "index.ipynb").read_text(encoding="utf-8"))
    text = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    linked = set(re.findall(r"\{doc\}`([\w-]+)`", text[text.index("## Chapter map"):]))
    assert linked == {docname.removeprefix("book/") for docname, _ in toc_entries()[1:]}
