"""Section kv_cache_calculator-7b-batch of "KV-cache calculator": a dense 7B in FP16 at batch 4 and 2,048 tokens.

Weights, cache, activations and totals recomputed from Mistral 7B v0.1's published shape (arXiv:2310.06825
Table 1: L 32, d 4096, 32 heads and 8 KV heads of 128, d_ff 14,336, V 32,000; untied head, no biases) and
Llama 2 7B's attention shape (32 KV heads of 128), written out here rather than read through mha_kit, and
compared with the stored outputs.
"""
import re

import chapter_outputs

NB = chapter_outputs.notebook("kv_cache_calculator")
L, D, H, KV, HD, V, FF = 32, 4096, 32, 8, 128, 32_000, 14_336
B, S = 4, 2048
PARAMS = 2 * V * D + L * (2 * D * H * HD + 2 * D * KV * HD + 3 * D * FF + 2 * D) + D
WEIGHTS = 2 * PARAMS
CACHE_GQA = 2 * L * KV * HD * 2 * S * B  # K and V, fp16
CACHE_MHA = 2 * L * H * HD * 2 * S * B  # Llama 2 7B: one KV head per query head
N = B * S
ACT = 2 * N * (D + (H + 2 * KV) * HD + 2 * FF)  # residual, q/k/v, gate and up: one layer, fp16
LOGITS_LAST, LOGITS_ALL = B * V * 4, N * V * 4
SCORES = B * H * S * S * 2
RESERVE = 10**9
LEAN = WEIGHTS + CACHE_GQA + ACT + LOGITS_LAST + RESERVE
HEAVY = WEIGHTS + CACHE_GQA + ACT + LOGITS_ALL + SCORES + RESERVE
LEAN_MHA = LEAN - CACHE_GQA + CACHE_MHA


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_parameters_and_weights():
    assert PARAMS == 7_241_732_096
    out = chapter_outputs.printed(NB, 'm7_facts = mk.MODEL_FACTS["mistral-7b"]')
    assert f"Mistral 7B: {PARAMS:,} parameters -> {WEIGHTS / 1e9:.2f} GB in fp16" in out
    assert "(the round 7e9 x 2 bytes: 14 GB)" in out
    assert glued("calc_7b_weights") == f"{WEIGHTS / 1e9:.2f}" == "14.48"


def test_cache_gqa8_and_mha():
    assert CACHE_GQA == 2**30 and CACHE_MHA == 4 * 2**30
    out = chapter_outputs.printed(NB, 'm7_facts = mk.MODEL_FACTS["mistral-7b"]')
    assert "KV cache, GQA-8 (Mistral 7B): 4 x 2,048 tokens x 128 KiB = 1 GiB (1.07 GB)" in out
    assert "KV cache, MHA (Llama 2 7B): 4 x 2,048 tokens x 512 KiB = 4 GiB (4.29 GB)" in out
    assert glued("calc_7b_cache_gqa8") == "1 GiB" and glued("calc_7b_cache_mha") == "4 GiB"


def test_activation_rows_and_totals():
    out = chapter_outputs.printed(NB, "n_step = batch_q * s_q")
    rows = dict(re.findall(r"^(.+?)\s{2,}(\d+(?:\.\d+)? GB)", out, re.M))
    assert ACT == 637_534_208 and SCORES == 2**30 and LOGITS_ALL == 1_048_576_000
    expect = {"weights (fp16)": WEIGHTS, "KV cache, GQA-8 (fp16)": CACHE_GQA, "prefill activations, one layer": ACT,
              "logits, every position": LOGITS_ALL, "eager attention scores, one layer": SCORES}
    for what, nbytes in expect.items():
        assert rows[what] == f"{nbytes / 1e9:.2f} GB", what
    assert rows["total, FlashAttention, last logits"] == f"{LEAN / 1e9:.1f} GB"
    assert f"{LEAN / 1e9:.1f}" == glued("calc_7b_lean") == "17.2"
    assert f"{HEAVY / 1e9:.1f}" == glued("calc_7b_heavy") == "19.3"
    assert f"{LEAN_MHA / 1e9:.1f}" == glued("calc_7b_lean_mha") == "20.4"
    assert 2 * B * (D + (H + 2 * KV) * HD + 2 * FF) == 304 * 1024 and "304 KiB" in out  # a decode step


def test_card_sizes_and_the_batch_8_drill():
    assert LEAN > 16e9 and LEAN_MHA > 16e9 and LEAN_MHA <= 24e9
    b8 = {"gqa": WEIGHTS + 2 * CACHE_GQA + 2 * ACT + LOGITS_LAST + RESERVE,
          "mha": WEIGHTS + 2 * CACHE_MHA + 2 * ACT + LOGITS_LAST + RESERVE,
          "mha_fp8": WEIGHTS + CACHE_MHA + 2 * ACT + LOGITS_LAST + RESERVE}  # fp8 halves the doubled cache
    assert b8["gqa"] <= 24e9 < b8["mha"] and b8["mha_fp8"] <= 24e9
    assert [glued(f"calc_7b_b8_{k}") for k in b8] == [f"{v / 1e9:.1f} GB" for v in b8.values()] \
        == ["18.9 GB", "25.3 GB", "21.1 GB"]
    out = chapter_outputs.printed(NB, "lean_mha = lean - cache_gqa8 + cache_mha")
    assert "16 GB card, batch 4: GQA-8 fits False, MHA fits False" in out
    assert "24 GB card, batch 4: GQA-8 fits True, MHA fits True" in out


def test_section_cites_and_links():
    text = chapter_outputs.section(NB, "kv_cache_calculator-7b-batch", end="kv_cache_calculator-context")
    chapter_outputs.assert_cited_in_list(text, ["mistral7b", "hfllamaconfig"])
    labels = chapter_outputs.book_labels()
    for ref in re.findall(r"\{ref\}`([\w.-]+)`", text):
        assert ref in labels, ref
    assert "8,192" in text and "assumption" in text



ACT_3FF = 2 * N * (D + (H + 2 * KV) * HD + 3 * FF)  # plus SwiGLU's act(gate) * up output


def test_mha_row_is_labelled_and_the_lower_bound():
    out = chapter_outputs.printed(NB, "n_step = batch_q * s_q")
    assert "Mistral 7B weights, MHA cache" in out and "(Llama 2 7B)   " not in out
    # Llama 2 7B's own feed-forward width has no kit record: the chapter must not type it (test_chapters_read_records)
    assert "Llama 2 7B itself" not in out
    assert glued("calc_7b_act_3ff") == f"{ACT_3FF / 1e9:.2f} GB" == "0.87 GB"
    assert glued("calc_7b_act") == "0.64 GB" and glued("calc_7b_params_b") == f"{PARAMS / 1e9:.1f}" == "7.2"
    assert 2 * CACHE_MHA == 8 * 2**30 and glued("calc_7b_mha_b8_cache") == "8 GiB"
    text = chapter_outputs.section(NB, "kv_cache_calculator-7b-batch", end="kv_cache_calculator-context")
    chapter_outputs.assert_cited_in_list(text, ["vllmv1sampler", "vllmengineargs"])
    assert "With MHA the cache is 8 GiB" not in text and "× 7.2 billion" not in text
