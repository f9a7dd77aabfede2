"""Chapters read model and GPU facts from mk.MODEL_FACTS and mk.GPUS; they do not type them.

Each test names a fact a chapter used to type and checks the chapter's code and prose no longer
carry it, while the stored output still shows the value the record holds.
"""
import json

import pytest
from booktoc import REPO_ROOT

import mha_kit as mk


def _cells(chapter, kind):
    notebook = json.loads((REPO_ROOT / "book" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == kind]


def _outputs(chapter):
    notebook = json.loads((REPO_ROOT / "book" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    return "\n".join("".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/markdown", ""))
                     for cell in notebook["cells"] for out in cell.get("outputs", []))


@pytest.mark.parametrize("chapter", ["kv_cache_calculator", "tradeoffs"])
def test_mistral_window_is_read_not_typed(chapter):
    window = mk.MODEL_FACTS["mistral-7b"].sliding_window
    text = "\n".join(_cells(chapter, "code") + _cells(chapter, "markdown"))
    assert "sliding_window" in text
    for typed in (str(window), f"{window:,}", f"{window // 1000}{{,}}{window % 1000:03d}"):
        assert f"window = {typed}" not in text and f"{typed}-token sliding window" not in text
        assert f"W = {typed}" not in text and f"min(s, {typed})" not in text


@pytest.mark.parametrize("chapter", ["kv_cache_calculator", "worked_example", "index", "follow_up_questions", "cheat_sheet",
                                     "answering", "common_mistakes", "why_interviewers_ask"])
def test_context_length_is_read_not_typed(chapter):
    # The calculator's parameter cell is the reader's input, not a model fact: it may say 8192.
    code = "\n".join(line for line in "\n".join(_cells(chapter, "code")).splitlines()
                     if not line.startswith("context_len = "))
    assert "context_length" in code
    assert "8192" not in code  # Llama 3 70B's / Llama 3 8B's / Mistral 7B's context
    assert "d=8192" not in code and "# d=" not in code  # shape comments typed by hand


def test_calculator_counts_parameters_from_the_records():
    code = "\n".join(_cells("kv_cache_calculator", "code"))
    assert "mk.dense_decoder_params(" in code and "def dense_decoder_params" not in code
    assert "vocab_size=" not in code and "intermediate_size=" not in code


@pytest.mark.parametrize("chapter", ["tradeoffs", "follow_up_questions", "cheat_sheet", "answering"])
def test_gpu_rates_come_from_mk_gpus(chapter):
    code = "\n".join(_cells(chapter, "code"))
    assert "mk.GPUS[" in code
    assert "989e12" not in code and "3.35e12" not in code and "4.8e12" not in code


def test_references_table_is_printed_from_the_records():
    markdown = "\n".join(_cells("references", "markdown"))
    assert "| `gpt2` |" not in markdown and "CITATION" not in "\n".join(_cells("references", "code"))
    table = _outputs("references")
    for name, facts in mk.MODEL_FACTS.items():
        assert f"| `{name}` | {facts.title} | {{cite}}`{facts.cite}` |" in table
