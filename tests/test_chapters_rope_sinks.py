"""The chapters 'Stretching RoPE' and 'Attention sinks and StreamingLLM': formats and stored claims.

nbval re-executes the chapters and compares every output; these tests read the stored outputs,
say which claim broke, and check the formats other tools read (tagged interview box, PNG figures
with alt text, nothing on stderr) and that model facts come from the records, not the prose.
"""
import re

import pytest
from booktoc import cells, png_figures, content_chapters, markdown, printed

import mha_kit as mk

CHAPTERS = ["rope_scaling", "attention_sinks"]


def source(chapter):
    return "\n".join("".join(c["source"]) for c in cells(chapter))


def test_chapters_are_in_the_long_context_part_in_order():
    chapters = content_chapters()
    assert chapters.index("rope_scaling") + 1 == chapters.index("attention_sinks")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_interview_box_is_tagged_and_nothing_goes_to_stderr(chapter):
    text = "\n".join(markdown(chapter))
    box = text[text.index("```{admonition} In the interview"):]
    assert re.search(r":class: tip\n\[[EMH]\] ", box), f"book/{chapter}.ipynb: untagged interview question"
    for cell in cells(chapter):
        assert all(o.get("name") != "stderr" for o in cell.get("outputs", [])), f"book/{chapter}.ipynb wrote to stderr"


@pytest.mark.parametrize("chapter, count", [("rope_scaling", 1), ("attention_sinks", 2)])
def test_every_figure_is_png_with_alt_text(chapter, count):
    assert png_figures(chapter) == count


def test_rope_chapter_reads_llama31_from_the_record():
    facts = mk.MODEL_FACTS["llama-3.1-405b"]
    text = printed("rope_scaling")
    assert f"base {facts.rope_theta:,.0f}" in text
    assert "pairs that never finish a turn in 8,192 tokens: 29 of 64" in text
    assert "(29, 6, 29)" in text  # llama3: kept, blended, divided
    assert "position 8 m with linear scaling == position m as trained: True" in text
    code = "\n".join("".join(c["source"]) for c in cells("rope_scaling") if c["cell_type"] == "code")
    for typed in ("500000", "500_000", "8192", "low_freq_factor\": 1", "factor=8"):
        assert typed not in code, f"book/rope_scaling.ipynb types {typed!r} instead of reading the record"


def test_sinks_chapter_equivalences_hold_in_the_stored_outputs():
    text = printed("attention_sinks")
    assert "text positions  == full attention with the sink mask: below 1e-12" in text
    assert "cache positions == attention over the kept tokens alone: below 1e-12" in text
    assert "positions held after 10 tokens: [0, 1, 2, 3, 6, 7, 8, 9]" in text  # StreamingLLM's example
    window, sink = (float(x) for x in re.findall(r"output off by ([\d.]+)", text))
    assert window > 1 > 10 * sink  # evicting the sink breaks the toy; keeping it does not


def test_sinks_chapter_reads_the_llama_context_from_the_record():
    facts = mk.MODEL_FACTS["llama-3-8b"]
    assert f"sink cache 4 + {facts.context_length - 4:,} = {facts.context_length:,} tokens" in printed("attention_sinks")
    assert "8188" not in source("attention_sinks") and "8,188" not in source("attention_sinks")
