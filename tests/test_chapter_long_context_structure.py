"""The chapter "Sparse patterns and long-context evaluation": its form, and its claims recomputed.

Every number is recomputed here from its definition (products written out), then looked up in what
the chapter printed, so a change in mha_kit or in the chapter that breaks a claim fails.
"""
import math
import re

import pytest
from booktoc import cells, markdown, png_figures, toc_docnames, printed

import mha_kit as mk

CHAPTER = "long_context_structure"
LABELS = ("sparse-patterns", "long-documents", "prefix-lm", "evaluation", "effective-context", "shipping-check")


def test_in_the_toc_with_its_labels():
    assert f"book/{CHAPTER}" in toc_docnames()
    text = "\n".join(markdown(CHAPTER))
    for label in LABELS:
        assert f"({CHAPTER}-{label})=\n#" in text, label


def test_interview_box_is_tagged_and_two_png_figures_with_alt_text():
    text = "\n".join(markdown(CHAPTER))
    box = text[text.index("```{admonition} In the interview"):]
    assert re.search(r":class: tip\n\*\*\[[EMH]\] ", box)
    assert png_figures(CHAPTER) == 2  # the sparse patterns, causal against prefix-LM


def test_nothing_on_stderr():
    assert all(o.get("name") != "stderr" for c in cells(CHAPTER) for o in c.get("outputs", []))


def test_windows_over_a_10000_token_document():
    room = 384 - 20 - 3  # [CLS] question(20) [SEP] ... [SEP]
    step = room - 128
    count = 1 + math.ceil((10_000 - room) / step)
    assert (room, count) == (361, 43)
    assert len(mk.document_windows(10_000, room, 128)) == count
    assert f"{room} context tokens per window, {count} windows, {count * 384:,} tokens encoded" in printed(CHAPTER)


def test_prefix_lm_chat_reprefill():
    causal, prefix = 10 * 500, 500 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10)
    assert (causal, prefix) == (5_000, 27_500)
    assert f"prefilled {causal:,} tokens with a causal model, {prefix:,} with a prefix LM" in printed(CHAPTER)


def test_prefix_lm_changes_earlier_outputs_causal_does_not():
    text = printed(CHAPTER)
    assert "causal     largest change in the outputs of tokens 0-3: 0.000" in text
    change = float(re.search(r"prefix LM  largest change in the outputs of tokens 0-3: ([0-9.]+)", text)[1])
    assert change > 0.01


def test_longformer_row_and_causal_share_at_2048():
    n, w = 2048, 256
    mask = mk.longformer_mask(n, w, global_tokens=[0])
    assert mask[1024].sum() == w + 1 + 1  # 128 on each side, itself, the global column
    assert mk.mask_density(mk.causal_mask(n)) == (n * (n + 1) // 2) / n**2
    assert 4 * n * n == 16 * 2**20  # fp32 scores of one head
    assert "full n^2 (no mask)                        2,048          100%       16 MiB" in printed(CHAPTER)


@pytest.mark.parametrize("model, effective", [("Llama3.1 (8B)", "32K"), ("GradientAI/Llama3 (70B)", "16K"),
                                              ("Gemini-1.5-pro", ">128K")])
def test_ruler_rows_as_printed(model, effective):
    row = next(line for line in printed(CHAPTER).splitlines() if line.startswith(model))
    assert row.split()[-3] == effective


def test_qwen_yarn_check():
    assert 32768 * 4 == 131072
    assert "with YaRN x4 the engine allows 131,072 tokens" in printed(CHAPTER)
    assert f"attention factor {0.1 * math.log(4) + 1:.3f}" in printed(CHAPTER)


def test_long_context_against_retrieval_bill_llama3_8b():
    # Llama 3 8B: 32 layers, d 4096, 32 heads of 128, 8 KV heads, d_ff 14336, vocab 128256; H100 bf16 989 TFLOP/s
    layers, d, heads, kv_heads, dh, dff, vocab = 32, 4096, 32, 8, 128, 14336, 128256
    per_token = layers * (2 * d * heads * dh + 2 * d * kv_heads * dh + 3 * d * dff)

    def flops(n):
        return 2 * n * per_token + 2 * vocab * d + layers * 2 * heads * dh * n * (n + 1)

    rate = 0.5 * 989e12
    assert round(flops(131072) / rate, 1) == 12.8
    assert round(flops(4096) / rate, 2) == 0.12
    assert round(flops(131072) / flops(4096)) == 103
    kv_per_token = 2 * layers * kv_heads * dh * 2
    assert 131072 * kv_per_token == 16 * 2**30 and 4096 * kv_per_token == 512 * 2**20
    follow = 2 * 200 * per_token + 2 * vocab * d + layers * 4 * heads * dh * sum(131072 + i for i in range(1, 201))
    assert round(follow / rate, 3) == 0.033


def test_agent_log_prefix_miss_against_hit():
    # Llama 3 8B written out: d 4096, 32 layers, 32 heads and 8 KV heads of 128, d_ff 14336, vocab 128256.
    d, layers, h, kv, dh, ff, vocab = 4096, 32, 32, 8, 128, 14336, 128256
    weights = layers * (d * h * dh + 2 * d * kv * dh + h * dh * d + 3 * d * ff)  # per token
    logits = 2 * vocab * d
    cached, new = 100_000, 1_000
    n = cached + new
    miss = 2 * n * weights + logits + layers * 2 * h * dh * n * (n + 1)
    hit = 2 * new * weights + logits + layers * 4 * h * dh * sum(cached + i for i in range(1, new + 1))
    rate = 0.5 * 989e12  # half the H100 SXM dense bf16 peak
    assert f"{hit / rate:.2f}" == "0.13" and f"{miss / rate:.1f}" == "8.3"
    assert round(miss / hit) == 61
    facts = mk.MODEL_FACTS["llama-3-8b"]
    assert mk.prefill_flops(facts, n) == miss
    assert mk.prefix_prefill_flops(facts, cached, new) == hit


def test_agents_section_holds_its_own_computation_and_box():
    """long_context_structure-agents: its cost cell and interview box come before the regression section."""
    srcs = ["".join(c["source"]) for c in cells(CHAPTER)]
    agents = next(i for i, s in enumerate(srcs) if s.startswith(f"({CHAPTER}-agents)="))
    regression = next(i for i, s in enumerate(srcs) if s.startswith(f"({CHAPTER}-long-prompt-regression)="))
    between = "\n".join(srcs[agents + 1:regression])
    assert "log_tokens, step_tokens = 100_000, 1_000" in between and "In the interview" in between
