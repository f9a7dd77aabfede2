"""Every figure the article quotes is printed by the chapter that discusses it.

The strings are checked in the stored cell OUTPUTS of book/<chapter>.ipynb, not
in the markdown: a number only counts once mha_kit has computed and printed it.
nbval (run by `make test`) then checks that re-running the notebook still prints it.
A figure counts only as a whole number: "64" is not found in "0.4464", "1,264" or "float64".
"""

import json
import re

import pytest
from booktoc import REPO_ROOT

# chapter -> the article's figures, exactly as the article writes them.
ARTICLE_FIGURES = {
    "first_principles": [
        "64",  # d_h = 512 / 8
        "1,048,576",
        "16,777,216",
        "131,072",
        "16,384",
        "(3, 4)",  # the toy input's shape
    ],
    "worked_example": [
        "8,192",
        "128",
        "67,108,864",
        "8,388,608",
        "150,994,944",
        "268,435,456",
        "134,217,728",
        "33,554,432",
        "4,194,304",
        "327,680",
        "320 KiB",
    ],
    "tradeoffs": ["93.3%", "82.2%"],
    "kv_cache_calculator": ["320 KiB", "40 KiB"],
    "common_mistakes": ["1,048,576"],
    "follow_up_questions": [
        "40 KiB",
        "320 KiB",
        "134,217,728",
        "150,994,944",
        "268,435,456",
        "33,554,432",
    ],
}

# MIME types whose text a reader sees on the page.
TEXT_MIME_TYPES = ("text/plain", "text/html", "text/markdown", "text/latex")


def _as_text(value):
    """nbformat stores multi-line strings either whole or as a list of lines."""
    return "".join(value) if isinstance(value, list) else str(value)


def output_text(notebook_path):
    """All the text a notebook's stored outputs show, joined by newlines."""
    notebook = json.loads(notebook_path.read_text(encoding="utf-8"))
    pieces = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                pieces.append(_as_text(output["text"]))
            for mime in TEXT_MIME_TYPES:
                if mime in output.get("data", {}):
                    pieces.append(_as_text(output["data"][mime]))
    return "\n".join(pieces)


def figure_pattern(figure):
    """A regex that finds ``figure`` as a whole token: no letter, digit or underscore touches it, and no
    decimal point or thousands separator joins it to a neighbouring digit."""
    return re.compile(r"(?<!\w)(?<!\d[.,])" + re.escape(figure) + r"(?!\w)(?![.,]\d)")


def shows(text, figure):
    """Whether ``text`` shows ``figure`` as a number of its own."""
    return figure_pattern(figure).search(text) is not None


@pytest.mark.parametrize(("text", "figure", "found"), [
    ("d_h = 64", "64", True),
    ("head size: 64.", "64", True),  # the end of a sentence
    ("<td>64</td>", "64", True),  # an HTML table cell
    ("(64, 128)", "128", True),
    ("[ 0.9054,  0.4464, -0.537 ]", "64", False),  # a decimal's digits
    ("holds 67,108,864 of 150,994,944", "64", False),  # the last group of a thousands-separated number
    ("1,264 bytes", "64", False),
    ("0,64 and 64.5", "64", False),  # after a decimal comma, before a decimal point
    ("dtype=float64", "64", False),  # part of a name
    ("2 x 1,048,576", "1,048,576", True),
    ("11,048,576", "1,048,576", False),
    ("1,048,576,000", "1,048,576", False),
    ("320 KiB", "320 KiB", True),
    ("1320 KiB", "320 KiB", False),
    ("93.3%", "93.3%", True),
    ("193.3%", "93.3%", False),
    ("(3, 4)", "(3, 4)", True),
])
def test_a_figure_is_found_only_as_a_whole_number(text, figure, found):
    assert shows(text, figure) is found


CASES = [
    pytest.param(chapter, figure, id=f"{chapter}-{figure}")
    for chapter, figures in ARTICLE_FIGURES.items()
    for figure in figures
]


@pytest.mark.parametrize(("chapter", "figure"), CASES)
def test_chapter_prints_article_figure(chapter, figure):
    """The article's figure appears in the chapter's executed output."""
    path = REPO_ROOT / "book" / f"{chapter}.ipynb"
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO_ROOT)} does not exist, so it cannot show {figure!r}")
    assert shows(output_text(path), figure), (
        f"{path.relative_to(REPO_ROOT)}: no cell output shows the article's figure {figure!r}; "
        "print it from an mha_kit computation (e.g. mk.format_int / mk.format_bytes) "
        "and re-execute the notebook"
    )
