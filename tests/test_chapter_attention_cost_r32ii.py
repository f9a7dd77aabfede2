"""Section attention_cost-compute-optimal, recomputed from the formulas.

C = 6 N D (Hoffmann et al. 2022 sec. 3.3, after Kaplan et al. 2020), D = 20 N (their Table 3: 1B on 20.2B
tokens), so N_opt = sqrt(C / 120); a model 4 times smaller on the same C reads C / (6 N / 4) tokens. Serving:
2N FLOPs and 2N bf16 bytes per token. Llama 3 8B's parameter count from its shape (config.json) and 15T tokens
(model card, "15T+").
"""
import math

import chapter_outputs

# Llama 3 8B: 32 layers, width 4096, 32 query heads, 8 KV heads of 128, FFN 14,336, vocabulary 128,256, untied
L, D, H, H_KV, D_H, D_FF, V = 32, 4096, 32, 8, 128, 14336, 128256


def llama8_params():
    per_layer = D * H * D_H + 2 * D * H_KV * D_H + H * D_H * D + 3 * D * D_FF + 2 * D
    return L * per_layer + 2 * V * D + D


def printed():
    return chapter_outputs.printed(chapter_outputs.notebook("attention_cost"), "TABLE3 = {")


def test_table3_ratios():
    assert "1B 20.2, 10B 20.5, 67B 22.4" in printed()


def test_budgets():
    text = printed()
    for c in (1e23, 1e24, 1e25):
        n = math.sqrt(c / 120)
        small = n / 4
        d_small = c / (6 * small)
        assert math.isclose(c, 6 * n * (20 * n))
        assert round(d_small / small) == 320
        line = (f"C = {c:.0e}: optimal N {n / 1e9:5.1f}B on D {20 * n / 1e12:5.2f}T; "
                f"4x smaller {small / 1e9:5.1f}B on {d_small / 1e12:5.1f}T (320 tokens/param)")
        assert line in text
        assert f"{2 * n / 1e9:5.0f} against {2 * small / 1e9:4.0f} GFLOP" in text


def test_llama3_8b_over_training():
    n8 = llama8_params()
    assert n8 == 8_030_261_248
    text = printed()
    assert f"Llama 3 8B: {15e12 / 8e9:,.0f} tokens/param at a nominal 8B, {15e12 / n8:,.0f} at" in text
    assert "1,875 tokens/param" in text
    c8 = 6 * n8 * 15e12
    assert f"whose Chinchilla-optimal model is {math.sqrt(c8 / 120) / 1e9:.0f}B" in text


def test_glued():
    nb = chapter_outputs.notebook("attention_cost")
    assert chapter_outputs.glued(nb, "cost_co_n23") == f"{math.sqrt(1e23 / 120) / 1e9:.0f}B" == "29B"
    assert chapter_outputs.glued(nb, "cost_co_n25") == f"{math.sqrt(1e25 / 120) / 1e9:.0f}B" == "289B"
    assert chapter_outputs.glued(nb, "cost_co_l8_ratio") == "1,875"
