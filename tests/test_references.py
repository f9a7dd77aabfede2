"""references.bib is one valid BibTeX database: every entry closes, and every key appears once.

A merge that drops an entry's closing brace makes pybtex swallow the next entry (and the build
fail on line N); a key added twice makes sphinxcontrib-bibtex refuse the file. Both have happened.
"""
import re
from pathlib import Path

import pytest
from pybtex.database import parse_string

BIB = (Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
HEADS = re.findall(r"^@(\w+)\{([^,\s]+),", BIB, re.M)


def test_pybtex_reads_every_entry():
    database = parse_string(BIB, "bibtex")
    assert len(database.entries) == len(HEADS)


def test_every_key_appears_once():
    keys = [key for _, key in HEADS]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    assert not repeated, f"keys defined more than once: {repeated}"


def _unclosed(text):
    """Entry heads whose braces do not balance before the next entry starts."""
    starts = [m.start() for m in re.finditer(r"^@", text, re.M)] + [len(text)]
    bad = []
    for a, b in zip(starts, starts[1:]):
        depth = 0
        for char in text[a:b]:
            depth += (char == "{") - (char == "}")
            if char == "}" and depth == 0:
                break
        else:
            bad.append(text[a:b].splitlines()[0])
    return bad


def test_every_entry_closes_before_the_next():
    assert not _unclosed(BIB)


def test_the_check_finds_an_entry_left_open():
    broken = "@misc{a,\n  title = {A}\n\n@misc{b,\n  title = {B}\n}\n"
    assert _unclosed(broken) == ["@misc{a,"]
    with pytest.raises(Exception):
        parse_string(broken + "@misc{c,\n title={C}\n}\n", "bibtex")


def test_every_entry_has_the_fields_its_type_needs():
    """sphinxcontrib-bibtex formats each entry with pybtex's "alpha" style (the book sets no other), which
    logs "missing booktitle in <key>" for an @inproceedings without a booktitle (and the like); the book
    builds with -W, so one such entry fails the build and, with it, the browser edition (2026-12-06)."""
    from pybtex.plugin import find_plugin
    from pybtex.style.template import FieldIsMissing

    database = parse_string(BIB, "bibtex")
    style = find_plugin("pybtex.style.formatting", "alpha")()
    missing = []
    # @misc is left out: every field of its template is optional (pybtex's unsrt.get_misc_template), and
    # formatting its 1,300 entries would take most of this test's time.
    for key, entry in database.entries.items():
        if entry.type == "misc":
            continue
        try:
            style.format_entry(key, entry)
        except FieldIsMissing as error:
            missing.append(f"{key}: {error}")
    assert not missing, "entries without a field their type needs:\n  " + "\n  ".join(missing)


def test_citation_locators_carry_no_markdown_escapes():
    """A role's text is literal: ``{cite:p}`key{gpu\\_worker.py}``` printed "gpu\\_worker.py", backslash and all, on
    34 citations of the site (seen in a screenshot, 2026-12-06). Underscores need no escape inside a role."""
    import json

    role = re.compile(r"\{cite:[a-z]+\}`([^`]*)`")
    book = Path(__file__).resolve().parents[1] / "book"
    found = []
    for path in sorted(book.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                found += [f"{path.name}: {text}" for text in role.findall("".join(cell["source"])) if "\\" in text]
    assert not found, "citations whose text shows a backslash on the page:\n  " + "\n  ".join(found)


def test_no_field_holds_an_unescaped_percent_sign():
    """pybtex reads each field as LaTeX, where an unescaped % starts a comment that swallows the rest of the field,
    closing brace included: the site build stopped with "unbalanced braces" on a URL with %20 in it (2026-12-07).
    Write \\% (a URL's %20 as \\%20 inside \\url{...}); the page shows a plain %."""
    from pybtex.richtext import Text

    with pytest.raises(Exception, match="unbalanced braces"):
        Text.from_latex(r"\url{https://example.org/a%20b}")
    assert "a%20b" in str(Text.from_latex(r"\url{https://example.org/a\%20b}"))
    database = parse_string(BIB, "bibtex")
    found = [f"{key}.{name}" for key, entry in database.entries.items() for name, value in entry.fields.items()
             if re.search(r"(?<!\\)%", value)]
    assert not found, f"unescaped % (a LaTeX comment to pybtex) in: {found}"
