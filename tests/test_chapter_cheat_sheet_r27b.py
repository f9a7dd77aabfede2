"""Section cheat_sheet-training-and-inference of the cheat sheet: training and inference optimisations.

Recomputed from the primary sources' formulas and Llama 3 8B's and Minitron 4B's config.json written out, not
through mha_kit: ZeRO's 2 + 2 + 12 bytes per parameter and its stage formulas (Rajbhandari et al. 2020, §3.1,
§5, Figure 1), Korthikanti et al. 2022's activation bytes per layer (§4.1, §5), 2:4's values plus 2-bit indices
(Mishra et al. 2021, §2), and the decode floor: weights plus one sequence's bf16 cache over H100 bandwidth.
"""
import re
from fractions import Fraction

import chapter_outputs

NB = chapter_outputs.notebook("cheat_sheet")
LABEL = "cheat_sheet-training-and-inference"

L, D, H, KV, HD, V, FF = 32, 4096, 32, 8, 128, 128_256, 14_336  # Llama 3 8B config.json
D4, FF4 = 3072, 9216  # Llama-3.1-Minitron-4B-Width-Base: hidden and MLP width; layers, heads, vocab unchanged
H100_BW = 3.35e12  # bytes/s, H100 SXM datasheet


def params(d, ff):
    attention = d * H * HD + 2 * d * KV * HD + H * HD * d  # q, k, v, o
    return 2 * V * d + L * (attention + 3 * d * ff + 2 * d) + d  # embeddings, untied head, blocks, final norm


def glued(key):
    return chapter_outputs.glued(NB, key)


def gb(x):
    return f"{x / 1e9:.1f} GB"


P8 = params(D, FF)


def test_parameter_counts():
    assert P8 == 8_030_261_248
    assert glued("cs_opt_params") == f"{P8:,}"
    assert params(D4, FF4) == 4_512_746_496  # the model card's 4.51B
    assert glued("cs_opt_minitron") == "4,512,746,496"


def test_zero_stages_on_eight_gpus():
    n = 8
    stages = [16 * P8, 4 * P8 + 12 * P8 / n, 2 * P8 + 14 * P8 / n, 16 * P8 / n]
    assert glued("cs_opt_adam") == gb(16 * P8) == "128.5 GB"
    assert glued("cs_opt_zero") == ", ".join(f"stage {i}: {gb(b)}" for i, b in enumerate(stages))
    assert stages[3] == 2 * P8  # ZeRO-3 over 8 GPUs: 2 bytes per parameter


def test_activation_checkpointing():
    s, b = 4096, 1
    none = L * s * b * D * (34 + Fraction(5 * H * s, D))
    selective, full = L * 34 * s * b * D, L * 2 * s * b * D
    assert none == 104_152_956_928  # 97 GiB
    got = {"none": none / 2**30, "selective": selective / 2**30, "full": full / 2**30}
    assert glued("cs_opt_acts") == ", ".join(f"{m}: {round(float(v))} GiB" for m, v in got.items())
    assert full / none < Fraction(1, 90)
    assert glued("cs_opt_recompute") == "4/3 (33% more)"


def test_two_four_bytes():
    linear = L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF)
    dense, sparse = 2 * linear, linear // 2 * (16 + 2) // 8  # half the values, each 16 bits plus a 2-bit index
    assert sparse * 16 == dense * 9
    assert glued("cs_opt_24") == f"{gb(dense)} dense against {gb(sparse)} with 2:4 (0.5625 of dense)"


def test_decode_floor_of_the_pruned_model():
    cache = 2 * L * KV * HD * 8192 * 2  # one sequence of 8,192 tokens, K and V in bf16
    t8, t4 = ((2 * params(d, ff) + cache) / H100_BW for d, ff in ((D, FF), (D4, FF4)))
    assert glued("cs_opt_floor") == f"Llama 3 8B: {1e3 * t8:.2f} ms, Minitron 4B Width: {1e3 * t4:.2f} ms"
    assert 0.55 < t4 / t8 < 0.6  # half the parameters, not half the time: the cache stays the same
    # a step looks up one row of the input embedding table, not all V of them
    r8, r4 = (t - V * d * 2 / H100_BW for t, d in ((t8, D), (t4, D4)))
    assert glued("cs_opt_floor_row") == f"Llama 3 8B: {1e3 * r8:.2f} ms, Minitron 4B Width: {1e3 * r4:.2f} ms"
    assert glued("cs_opt_floor_row") == "Llama 3 8B: 4.80 ms, Minitron 4B Width: 2.78 ms"


def test_logits_outweigh_full_recomputation():
    logits = 4096 * V * 4  # one sequence's fp32 logits
    assert glued("cs_opt_logits") == gb(logits) == "2.1 GB"
    assert logits > L * 2 * 4096 * D  # more than the fully recomputed layers keep


def test_section_links_and_table():
    text = chapter_outputs.section(NB, LABEL)
    for ref in ("weight_quantization-sparsity", "weight_quantization-distillation", "gpu_kernels-fusion",
                "cuda_basics-activation-checkpointing", "tensor_parallel-zero", "cuda_basics-loss-scaling"):
        assert f"{{ref}}`{ref}`" in text
    rows = [r for r in text.splitlines() if r.startswith("| ") and not r.startswith("| Technique")]
    assert len(rows) == 13
    assert all(re.search(r"\| (both|train|infer)", r) for r in rows)
    assert "```{admonition} In the interview" in text and text.count(":class: dropdown") == 6
    assert "FP8 needs Ada or Hopper" in text and "needs Hopper," not in text
    assert "; quantisation cuts only bytes" not in text and "Weight-only quantisation cuts only bytes" in text
