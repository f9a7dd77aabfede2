"""tests/chapter_outputs.py's section slicer on a small notebook built here, so its bounds are known exactly."""
import pytest

import chapter_outputs


def _nb(*cells):
    return {"cells": [{"cell_type": kind, "source": [text]} for kind, text in cells]}


NB = _nb(("markdown", "(a)=\n## A"), ("code", "x = 1"), ("markdown", "(a-sub)=\n### A.1"), ("markdown", "text"),
         ("markdown", "(b)=\n## B"), ("code", "y = 2"), ("markdown", "## Summary"), ("markdown", "tail"))


def test_default_stops_at_the_next_anchored_level_two_section_and_keeps_subsections():
    assert chapter_outputs.section(NB, "a") == "(a)=\n## A\nx = 1\n(a-sub)=\n### A.1\ntext"


def test_an_end_label_or_heading_stops_there():
    assert chapter_outputs.section(NB, "a", end="a-sub") == "(a)=\n## A\nx = 1"
    assert chapter_outputs.section(NB, "b", end="## Summary") == "(b)=\n## B\ny = 2"


def test_the_last_section_runs_to_the_end_and_kinds_filter_cells():
    assert chapter_outputs.section(NB, "b", kinds=("markdown",)) == "(b)=\n## B\n## Summary\ntail"


@pytest.mark.parametrize("label, end, says", [("c", None, "no cell opens with (c)="),
                                               ("b", "a", "no cell after (b)= opens with (a)=")])
def test_a_missing_or_earlier_label_is_named(label, end, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        chapter_outputs.section(NB, label, end=end)


def test_cell_glue_reads_only_the_marked_cell():
    glue = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "k"}},
            "data": {chapter_outputs.GLUE_TEXT: "'1,024'"}}
    other = dict(glue, metadata={"scrapbook": {"name": "j"}})
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1"], "outputs": [glue]},
                    {"cell_type": "code", "source": ["y = 2"], "outputs": [other, {"name": "stdout", "text": ["2\n"]}]}]}
    assert chapter_outputs.cell_glue(nb, "x = 1") == {"k": "1,024"}
    assert chapter_outputs.cell_glue(nb, "y = 2") == {"j": "1,024"}


def test_a_marker_no_code_cell_contains_is_named():
    nb = {"cells": [{"cell_type": "markdown", "source": ["x = 1"]}, {"cell_type": "code", "source": ["y = 2"], "outputs": []}]}
    for reader in (chapter_outputs.cell_glue, chapter_outputs.printed):
        with pytest.raises(ValueError, match="no code cell contains 'x = 1'"):
            reader(nb, "x = 1")
