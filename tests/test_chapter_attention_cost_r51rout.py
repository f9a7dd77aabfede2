"""Section attention_cost-custom-backward (r51rout): the loss head's logits and Liger's chunk.

The logits' bytes recomputed from Llama 3 8B's published vocabulary (128,256) and width (4,096) at 8,192 tokens,
and Liger-Kernel's chunk rule (fused_linear_cross_entropy.py: inc_factor = ceil(V / H), chunk = next power of two
of ceil(BT / inc_factor)) worked with integer arithmetic; the drill's numbers for a 152,064 x 3,584 head at 16K.
"""
import math

import chapter_outputs

NB = chapter_outputs.notebook("attention_cost")
TOKENS, V, H = 8_192, 128_256, 4_096


def _chunk(tokens, v, h):
    inc = math.ceil(v / h)
    return inc, 2 ** math.ceil(math.log2(math.ceil(tokens / inc)))


def test_logits_and_chunk():
    logits = TOKENS * V * 4
    assert logits == 4_202_692_608
    inc, chunk = _chunk(TOKENS, V, H)
    assert (inc, chunk) == (32, 256)
    glue = chapter_outputs.cell_glue(NB, "CE_TOKENS = ")
    assert glue["ac_ce_logits"] == f"{logits / 2**30:.1f} GiB" == "3.9 GiB"
    assert (glue["ac_ce_inc"], glue["ac_ce_chunk"]) == ("32", "256")
    assert glue["ac_ce_chunk_bytes"] == f"{chunk * V * 2 / 2**20:.1f} MiB" == "62.6 MiB"
    assert glue["ac_ce_hidden"] == "64 MiB" and TOKENS * H * 2 == 64 * 2**20
    assert "32 chunks" in chapter_outputs.printed(NB, "CE_TOKENS = ")
    # checkpointing each chunk recomputes the logits matmul once: 2 x BT x H x V
    assert glue["ac_ce_recompute_tflop"] == f"{2 * TOKENS * H * V / 1e12:.1f}" == "8.6"
    # Liger's weight gradient, V x H in bf16, held from the forward to the backward
    assert glue["ac_ce_grad_w"] == f"{V * H * 2 // 2**20:,} MiB" == "1,002 MiB" and V * H * 2 % 2**20 == 0


def test_drill():
    inc, chunk = _chunk(16_384, 152_064, 3_584)
    assert (inc, math.ceil(16_384 / inc), chunk) == (43, 382, 512)
    text = chapter_outputs.section(NB, "attention_cost-custom-backward", end="attention_cost-training-flops")
    assert f"\\approx {16_384 * 152_064 * 4 / 2**30:.1f}$ GiB" in text
    assert f"= {chunk * 152_064 * 2 / 2**20}$ MiB" in text and f"{16_384 * 3_584 * 2 // 2**20} MiB" in text


def test_cites_and_links():
    text = chapter_outputs.section(NB, "attention_cost-custom-backward", end="attention_cost-training-flops")
    chapter_outputs.assert_cited(text, ["pytorchextendingautograd", "flashattnfunccode", "ligerflcecode",
                                        "pytorchlibraryopcheck", "torchcheckpointdocs", "pytorchregisterautograd",
                                        "flashattntests"])
    chapter_outputs.assert_links(text, ["attention_cost-backward", "attention_cost-backward-equations",
                                        "decoding_sampling-large-vocab-loss", "serving_operations-torch-compile",
                                        "serving_operations-custom-op", "serving_reliability-on-device"])
