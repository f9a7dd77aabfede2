"""Every figure the article quotes is printed by the chapter that discusses it.

The strings are checked in the stored cell OUTPUTS of book/<chapter>.ipynb, not
in the markdown: a number only counts once mha_kit has computed and printed it.
nbval (run by `make test`) then checks that re-running the notebook still prints it.
"""

import json

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
    assert figure in output_text(path), (
        f"{path.relative_to(REPO_ROOT)}: no cell output shows the article's figure {figure!r}; "
        "print it from an mha_kit computation (e.g. mk.format_int / mk.format_bytes) "
        "and re-execute the notebook"
    )
