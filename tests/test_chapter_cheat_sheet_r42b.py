"""Section cheat_sheet-roi-order of the cheat sheet: speed-ups in order of return on investment.

The decode roofline recomputed from Llama 3 8B's config.json, not through mha_kit: a step reads every weight but the
input embedding table (its 128,256 x 4,096 rows are looked up) and each sequence's 4,096-token cache,
2 h_kv d_h L bytes-per-element a token; its FLOPs are 2 per streamed weight per token plus 4 s h d_h L for
attention; time max(bytes / 3.35 TB/s, FLOPs / peak), the peak 989 TFLOP/s in bf16 and twice that in FP8
(H100 SXM datasheet).
"""
import re

import chapter_outputs

NB = chapter_outputs.notebook("cheat_sheet")
LABEL = "cheat_sheet-roi-order"
L, D, H, KV, HD, V, FF = 32, 4096, 32, 8, 128, 128_256, 14_336  # Llama 3 8B config.json
BW, BF16 = 3.35e12, 989e12
CTX = 4096
STREAMED = V * D + L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF + 2 * D) + D  # head, blocks, norm
# a guard of the recomputation, not a chapter check: Llama 3 8B's published count (the safetensors index's
# 8,030,261,248 parameters, config.json's untied head) less the embedding table, which decode looks up
assert STREAMED == 8_030_261_248 - V * D
SETUPS = {"bf16 weights, bf16 cache": (2, 2, 1), "FP8 weights, bf16 cache": (1, 2, 2),
          "FP8 weights, FP8 cache": (1, 1, 2)}  # bytes per weight, bytes per cache element, peak over bf16


def bytes_flops(name, batch):
    w, c, _ = SETUPS[name]
    return STREAMED * w + batch * CTX * 2 * KV * HD * L * c, batch * (2 * STREAMED + 4 * CTX * H * HD * L)


def step(name, batch):
    nbytes, flops = bytes_flops(name, batch)
    return max(nbytes / BW, flops / (SETUPS[name][2] * BF16))


def test_table():
    text = chapter_outputs.printed(NB, "llama8, h100 = ")
    for name in SETUPS:
        row = (f"{name:<26}{1e3 * step(name, 1):>8.2f}{1e3 * step(name, 64):>9.2f}"
               f"{1 / step(name, 1):>11,.0f}{64 / step(name, 64):>12,.0f}")
        assert row in text, row
    for name in SETUPS:  # memory-bound throughout: the doubled FP8 peak is idle
        for batch in (1, 64):
            nbytes, flops = bytes_flops(name, batch)
            assert nbytes / BW > flops / (SETUPS[name][2] * BF16)
    prose = " ".join(chapter_outputs.section(NB, LABEL, end="cheat_sheet-training-and-inference",
                                             kinds=("markdown",)).split())
    assert "Every step stays memory-bound here, so the doubled FP8 peak is idle." in prose


def test_glued():
    glued = chapter_outputs.cell_glue(NB, "llama8, h100 = ")
    bf16, fp8w, both = SETUPS
    assert glued["cs_roi_batching"] == f"{64 * step(bf16, 1) / step(bf16, 64):.1f}" == "20.2"
    assert glued["cs_roi_fp8w_b1"] == f"{step(bf16, 1) / step(fp8w, 1):.2f}" == "1.93"
    assert glued["cs_roi_fp8w_b64"] == f"{step(bf16, 64) / step(fp8w, 64):.2f}" == "1.18"
    assert glued["cs_roi_fp8wkv_b64"] == f"{step(bf16, 64) / step(both, 64):.2f}" == "2.00"


def test_order_and_links():
    text = chapter_outputs.section(NB, LABEL, end="cheat_sheet-training-and-inference")
    rungs = [text.index(s) for s in ("1. **Settings only", "2. **FP8 weights", "3. **Speculative", "4. **Last")]
    assert rungs == sorted(rungs)
    assert "kwon2023vllm{Abstract, §6}" in text
    refs = set(re.findall(r"\{ref\}`([\w.-]+)`", text))
    assert {"deployment_plan-amdahl", "speculative_decoding-three-costs", "serving_kv_cache-paging"} <= refs
    assert refs <= chapter_outputs.book_labels(), refs - chapter_outputs.book_labels()
