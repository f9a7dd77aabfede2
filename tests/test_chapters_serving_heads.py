"""The chapters 'Serving the KV cache' and 'Why several heads': shared formats and stored claims.

nbval re-executes the chapters and compares every output; these tests read the stored outputs
and say which claim broke, and check the formats other tools read (chain, tags, alt text).
"""
import re

import pytest
from booktoc import cells, png_figures, markdown, toc_docnames, printed

import mha_kit as mk

CHAPTERS = ["serving_kv_cache", "why_several_heads"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_is_in_the_toc_part_what_interviewers_ask_next(chapter):
    assert f"book/{chapter}" in toc_docnames()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_interview_box_question_is_tagged(chapter):
    text = "\n".join(markdown(chapter))
    box = text[text.index("```{admonition} In the interview"):]
    assert re.search(r":class: tip\n\[[EMH]\] ", box), f"book/{chapter}.ipynb: untagged interview question"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_figure_is_png_with_alt_text(chapter):
    assert png_figures(chapter) == 2


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_nothing_on_stderr(chapter):
    for cell in cells(chapter):
        assert all(o.get("name") != "stderr" for o in cell.get("outputs", [])), f"book/{chapter}.ipynb wrote to stderr"


def test_serving_chapter_equivalences_hold_in_the_stored_outputs():
    text = printed("serving_kv_cache")
    assert "largest difference from the contiguous cache: 0.0\n" in text
    assert "each forked request == full causal pass over prompt + its tokens: [True, True]" in text
    assert "rolling cache == full attention with the window mask: True" in text


def test_serving_chapter_reads_mistral_window_from_the_record():
    window = mk.MODEL_FACTS["mistral-7b"].sliding_window
    text = printed("serving_kv_cache")
    assert f"sliding window W = {window:,} tokens" in text
    source = "".join("".join(c["source"]) for c in cells("serving_kv_cache"))
    assert str(window) not in source and f"{window:,}" not in source  # never typed in the chapter


def test_heads_chapter_ranks_and_tensor_parallel_check():
    text = printed("why_several_heads")
    for h, d_h in ((1, 64), (4, 16), (16, 4)):
        assert re.search(rf"^\s*{h}\s+{d_h}\s+{h} x 96 x 96\s+\[{d_h}\]\s+16,384\s", text, flags=re.M)
    assert "sum of partials == multi_head_attention: True" in text
    assert "toy example, fused == separate projections: True" in text
