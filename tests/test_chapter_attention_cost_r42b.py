"""Section attention_cost-optimise-each-part, recomputed from the formulas and Llama 3 70B's config.json.

Per token and layer, 2 FLOPs per multiply-add: projections 2(2 d h d_h + 2 d h_kv d_h), a gated MLP 2 * 3 d d_ff,
attention 4 k h d_h over k keys (k = (n + 1) / 2 on average in a causal prefill of n tokens; Kaplan et al. 2020,
sec. 2.1, Table 1, count the same way). Bytes: the blocks' bf16 weights once a step; the bf16 cache, 2 h_kv d_h
L * 2 bytes a token, written once in prefill and read once per sequence in decode. Time per part: the roofline
max(bytes / 3.35 TB/s, FLOPs / 989 TFLOP/s) of the H100 SXM datasheet.
"""
import re

import chapter_outputs

NB = chapter_outputs.notebook("attention_cost")
LABEL = "attention_cost-optimise-each-part"
L, D, H, H_KV, D_H, D_FF = 80, 8192, 64, 8, 128, 28_672  # Llama 3 70B config.json
BW, PEAK = 3.35e12, 989e12  # H100 SXM: bytes/s, dense bf16 FLOP/s
STEPS = {"prefill 2,048": (2_048, 2_048), "prefill 131,072": (131_072, 131_072),
         "decode B=1, 4K cache": (1, 4_096), "decode B=64, 4K cache": (64, 4_096)}


def shares(name):
    tokens, keys = STEPS[name]
    prefill = name.startswith("prefill")
    mean_keys = (keys + 1) / 2 if prefill else keys
    lin_flops = tokens * L * (2 * (2 * D * H * D_H + 2 * D * H_KV * D_H) + 2 * 3 * D * D_FF)
    attn_flops = tokens * L * 4 * mean_keys * H * D_H
    weights = L * (2 * D * H * D_H + 2 * D * H_KV * D_H + 3 * D * D_FF)
    lin_bytes = 2 * weights
    attn_bytes = (1 if prefill else tokens) * keys * (2 * H_KV * D_H * L * 2)
    lin_t, attn_t = max(lin_bytes / BW, lin_flops / PEAK), max(attn_bytes / BW, attn_flops / PEAK)
    return (lin_flops / (lin_flops + attn_flops), lin_bytes / (lin_bytes + attn_bytes), lin_t / (lin_t + attn_t),
            lin_flops / lin_bytes)


def test_table_rows():
    text = chapter_outputs.printed(NB, "block_weights = L70")
    for name in STEPS:
        f, b, t, intensity = shares(name)
        row = (f"{name:<23}{f:>9.0%} /{1 - f:>4.0%}{b:>9.0%} /{1 - b:>4.0%}"
               f"{t:>8.0%} /{1 - t:>4.0%}{intensity:>12,.0f}")
        assert row in text, row


def test_regimes():
    """Prefill 2K: the matrices own the time; 131K: attention does; decode B=64: weights still under the ridge."""
    prose = " ".join(chapter_outputs.section(NB, LABEL, kinds=("markdown",)).split())
    assert shares("prefill 2,048")[2] > 0.95 and shares("prefill 2,048")[3] >= 1000 > PEAK / BW  # "thousands"
    assert ("take {glue:text}`opt_p2k_lin_time` of the roofline time, and they are compute-bound "
            "(thousands of FLOPs per weight byte, far past the ridge)") in prose
    assert shares("prefill 131,072")[2] < 0.5
    assert ("attention's scores and weighted sum take {glue:text}`opt_p131k_attn_time` of the time") in prose
    assert shares("decode B=1, 4K cache")[1] > 0.98
    assert "**Decode at batch 1**: the weights are {glue:text}`opt_d1_lin_bytes` of the bytes" in prose
    assert shares("decode B=64, 4K cache")[3] < PEAK / BW
    assert "do only {glue:text}`opt_d64_intensity` FLOPs per weight byte, below the ridge" in prose
    assert "FLOPs per byte are still under the H100's ridge, so the step is bytes" in prose


def test_glued():
    glued = chapter_outputs.cell_glue(NB, "block_weights = L70")
    assert glued["opt_p2k_lin_time"] == f"{shares('prefill 2,048')[2]:.0%}" == "98%"
    assert glued["opt_p131k_attn_time"] == f"{1 - shares('prefill 131,072')[2]:.0%}" == "56%"
    assert glued["opt_d1_lin_bytes"] == f"{shares('decode B=1, 4K cache')[1]:.0%}"
    assert glued["opt_d64_attn_bytes"] == f"{1 - shares('decode B=64, 4K cache')[1]:.0%}" == "39%"
    assert glued["opt_d64_intensity"] == f"{shares('decode B=64, 4K cache')[3]:.0f}"
    ffn = 3 * D * D_FF / (2 * D * H * D_H + 2 * D * H_KV * D_H + 3 * D * D_FF)
    assert glued["opt_ffn_weight_share"] == f"{ffn:.0%}" == "82%"
    # FlashAttention's Theta(n^2 d^2 / M) over the Theta(n d) floor: n d / M, M = 228 KB of bf16 elements
    assert glued["opt_fa_over_floor"] == f"{131_072 * D_H / (228 * 1024 / 2):.0f}" == "144"


def test_links_resolve():
    text = chapter_outputs.section(NB, LABEL, end="attention_cost-memory")
    refs = set(re.findall(r"\{ref\}`([\w.-]+)`", text))
    assert {"attention_cost-flop-split", "worked_example-bytes", "deployment_plan-amdahl",
            "low_precision_kv-kv-or-weights", "attention_cost-flashattention"} <= refs
    assert refs <= chapter_outputs.book_labels(), refs - chapter_outputs.book_labels()
