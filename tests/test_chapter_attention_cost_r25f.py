"""Section attention_cost-tokenizer-fertility of "What attention costs".

Recomputed from Llama 3 8B's and 70B's shapes written out (config.json / arXiv:2407.21783 Table 3), not through
mha_kit: the prefill FLOPs of a document split into the linear part (projections, SwiGLU, output head) and the
causal attention part, the bf16 KV cache, the words a 131,072-token window holds, and the 2·d·N parameters of
N new untied vocabulary rows against the whole model.
"""
import pytest

import chapter_outputs

# Llama 3 8B: 32 layers, d 4096, 32 query heads and 8 KV heads of 128, SwiGLU 14336, vocabulary 128256
L8, D8, H8, KV8, HD, FF8, V = 32, 4096, 32, 8, 128, 14_336, 128_256
L70, D70, H70, KV70, FF70 = 80, 8192, 64, 8, 28_672
WORDS, BASE, WINDOW = 20_000, 1.3, 131_072  # the section's stated assumptions


def params(layers, d, h, kv, ff):  # untied Llama: two V x d tables, attention, SwiGLU, two norms a layer, final norm
    attn = d * h * HD + 2 * d * kv * HD + h * HD * d
    return 2 * V * d + layers * (attn + 3 * d * ff + 2 * d) + d


def costs(ratio):
    n = round(WORDS * BASE * ratio)
    linear = n * (L8 * 2 * (2 * D8 * H8 * HD + 2 * D8 * KV8 * HD) + L8 * 2 * 3 * D8 * FF8 + 2 * D8 * V)
    attn = L8 * 2 * H8 * n * n * HD  # QK^T and PV: 2 h n^2 d_h MACs, 2 FLOPs each, half for the causal mask
    kv = 2 * L8 * KV8 * HD * n * 2  # K and V, bf16
    return n, linear, attn, kv


NB = chapter_outputs.notebook("attention_cost")


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_model_totals():
    assert params(L8, D8, H8, KV8, FF8) == 8_030_261_248
    assert params(L70, D70, H70, KV70, FF70) == 70_553_706_496
    assert glued("cost_tok_8b_total") == "8,030,261,248"
    assert glued("cost_tok_vocab") == "128,256"


@pytest.mark.parametrize("ratio, tokens, kv", [(1.0, 26_000, "3.2 GiB"), (1.5, 39_000, "4.8 GiB")])
def test_tokens_and_cache(ratio, tokens, kv):
    n, _, _, kv_bytes = costs(ratio)
    assert n == tokens and glued(f"cost_tok_n_{round(100 * ratio)}") == f"{tokens:,}"
    assert f"{kv_bytes / 2**30:.1f} GiB" == kv == glued(f"cost_tok_kv_{round(100 * ratio)}")


def test_scaling_exponents():
    base, worst = costs(1.0), costs(1.5)
    assert worst[1] * 2 == base[1] * 3  # linear: 1.5x
    assert worst[2] * 4 == base[2] * 9  # attention: 2.25x exactly
    assert f"{worst[2] / base[2]:.2f}" == "2.25" == glued("cost_tok_attn_x150")
    total = (worst[1] + worst[2]) / (base[1] + base[2])
    assert 1.5 < total < 2.25
    assert f"{total:.2f}" == glued("cost_tok_total_x150") == "1.73"
    assert f"{base[2] / (base[1] + base[2]):.1%}" == glued("cost_tok_share_100") == "31.2%"


def test_words_in_the_window():
    assert f"{WINDOW / BASE:,.0f}" == "100,825" == glued("cost_tok_fit_100")
    assert f"{WINDOW / (1.5 * BASE):,.0f}" == "67,216" == glued("cost_tok_fit_150")


def test_printed_table_rows():
    text = chapter_outputs.printed(NB, "tok_rows[ratio] =")
    assert "26,000         390.2       177.2       31.2%    3.2 GiB        100,825" in text
    assert "tokens x1.500, linear x1.500, attention x2.250, KV bytes x1.500, words in window x0.667" in text


def test_vocabulary_extension():
    added8, added70 = 2 * D8 * 10_000, 2 * D70 * 10_000
    assert added8 == 81_920_000 and glued("cost_tok_8b_added_10k") == "81,920,000"
    assert f"{added8 / params(L8, D8, H8, KV8, FF8):.2%}" == "1.02%" == glued("cost_tok_8b_share_10k")
    assert f"{added70 / params(L70, D70, H70, KV70, FF70):.2%}" == "0.23%" == glued("cost_tok_70b_share_10k")
    assert f"{(V + 10_000) / V:.3f}" == "1.078" == glued("cost_tok_head_x_10k")


def test_question_quoted_and_label():
    text = (chapter_outputs.BOOK / "attention_cost.ipynb").read_text()
    assert "(attention_cost-tokenizer-fertility)=" in text
    assert "can we reuse the standard Llama 3 tokenizer?" in text


def test_window_model_and_cited_claims():
    text = (chapter_outputs.BOOK / "attention_cost.ipynb").read_text()
    # the 26,000-39,000-token prefill needs Llama 3.1's 128K window; Llama 3 8B stops at 8,192
    assert round(WORDS * BASE * 1.5) > 8_192 and round(WORDS * BASE * 1.5) < WINDOW
    assert "contract on Llama 3.1 8B" in text and "contract on Llama 3 8B" not in text
    assert "contract on\\n\",\n    \"Llama 3.1 8B attention" in text
    # Sachidananda et al. adapt the tokenizer instead of further pretraining
    assert "with **no** further pretraining" in text
    assert "instead of continued pretraining" not in text
    assert "The risk is only the cost" not in text
    # the baseline sits above the cited 1.2 tokens a word, on purpose
    assert BASE > 1.2 and glued("cost_tok_base") == "1.3"
    # full-square MACs 2 h n^2 d_h equal the causal half's FLOPs: (h n^2 d_h / 2 MACs) x 2 x 2
    n = 26_000
    assert 2 * H8 * n * n * HD == (H8 * n * n * HD // 2) * 2 * 2


def test_bibliography_titles():
    bib = (chapter_outputs.BOOK.parent / "references.bib").read_text()
    assert "The Tokenizer Tax Across 25 European Languages" in bib
    assert "@misc{ali2023tokenizer," in bib
