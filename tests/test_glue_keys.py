"""Glue keys (myst-nb's ``glue``) within a chapter: each key glued once, each key the prose uses glued.

A key glued by two cells makes the book build warn ("glue key ... duplicate") and the prose show whichever
cell ran last; a key the prose names that no cell glues fails the build. Both are found here from the stored
outputs, without building the book.
"""
import json
import re
from collections import Counter
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
#: ``{glue}`key```, ``{glue:text}`key```, ``{glue:md}`key```... (a key of another notebook has ``::``)
USED = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)`")


def glued(nb):
    """Every key the notebook's stored outputs glue, once per cell output that glues it."""
    return [out["metadata"]["scrapbook"]["name"] for cell in nb["cells"] if cell["cell_type"] == "code"
            for out in cell.get("outputs", []) if "scrapbook" in out.get("metadata", {})]


def problems(nb):
    keys = glued(nb)
    twice = sorted(key for key, n in Counter(keys).items() if n > 1)
    used = {key for cell in nb["cells"] if cell["cell_type"] == "markdown"
            for key in USED.findall("".join(cell["source"]))}
    return [f"glued twice: {key}" for key in twice] + [f"used, never glued: {key}" for key in sorted(used - set(keys))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_glue_key_is_glued_once_and_every_key_used_is_glued(path):
    assert problems(json.loads(path.read_text())) == []


def test_the_check_finds_a_key_glued_twice_and_one_never_glued():
    def output(key):
        return {"output_type": "display_data", "data": {}, "metadata": {"scrapbook": {"name": key}}}

    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [output("a"), output("b")]},
                    {"cell_type": "code", "source": "", "outputs": [output("a")]},
                    {"cell_type": "markdown", "source": "{glue:text}`a` and {glue}`c` and {glue:text}`x.ipynb::d`"}]}
    assert problems(nb) == ["glued twice: a", "used, never glued: c"]
