"""Section serving_operations-diffusion-vs-ar, recomputed from the sources' shapes, not from the chapter's code.

DiT (facebookresearch/DiT): DiT-XL/2 is depth 28, hidden 1152, patch 2, MLP ratio 4, adaLN 6 x hidden per block;
sample.py takes a latent of image_size // 8 and 250 steps, and doubles the batch for guidance; the README's table
gives 119 Gflops for XL/2 at 256. VAR (FoundationVision/VAR): patch_nums (1, 2, 3, 4, 5, 6, 8, 10, 13, 16),
width 64 x depth, the same 6-way adaLN per block, a KV cache over the coarser scales. H100 SXM: 3.35 TB/s and
989 dense bf16 TFLOP/s. MusicGen (audiocraft docs/MUSICGEN.md): 50 autoregressive steps a second, 4 codebooks.
"""
import math

import chapter_outputs

BW, PEAK = 3.35e12, 989e12
DIT_D, DIT_L, DIT_TOKENS = 1152, 28, (256 // 8 // 2) ** 2
VAR_D, VAR_L = 64 * 30, 30
SCALES = (1, 2, 3, 4, 5, 6, 8, 10, 13, 16)
MARKER = "def u48_macs("


def block_macs(d, rows, keys):
    qkv, out, mlp = 3 * d * d, d * d, 2 * 4 * d * d  # per new token
    return rows * (qkv + out + mlp) + rows * keys * d + rows * keys * d  # Q K^T, then P V


def passes():
    dit = [DIT_L * block_macs(DIT_D, DIT_TOKENS, DIT_TOKENS)] * 250
    raster = [VAR_L * block_macs(VAR_D, 1, s) for s in range(1, 16 * 16 + 1)]
    same = [DIT_L * block_macs(DIT_D, 1, s) for s in range(1, 16 * 16 + 1)]
    var, seen = [], 0
    for p in SCALES:
        seen += p * p
        var.append(VAR_L * block_macs(VAR_D, p * p, seen))
    return dit, raster, same, var


def weights(d, layers):
    return layers * (12 + 6) * d * d  # projections and MLP, then adaLN's six modulation vectors


def ms(macs_per_pass, params):
    return 1e3 * sum(max(2 * params / BW, 2 * 2 * m / PEAK) for m in macs_per_pass)  # bf16 weights, CFG batch of 2


def test_dit_forward_matches_the_readme():
    dit, _, _, _ = passes()
    assert DIT_TOKENS == 256 and sum(p * p for p in SCALES) == 680
    assert abs(dit[0] / 1e9 - 119) < 2  # the README's "Gflops" are multiply-adds
    assert round(weights(DIT_D, DIT_L) / 1e6) == 669 and round(weights(VAR_D, VAR_L) / 1e9, 2) == 1.99


def test_table_rows():
    dit, raster, same, var = passes()
    out = chapter_outputs.printed(chapter_outputs.notebook("serving_operations"), MARKER)
    rows = {"DiT-XL/2, 250 steps": (dit, DIT_TOKENS * 250, weights(DIT_D, DIT_L)),
            "raster AR, VAR-d30 net": (raster, 256, weights(VAR_D, VAR_L)),
            "raster AR, DiT-XL/2 net": (same, 256, weights(DIT_D, DIT_L)),
            "VAR-d30, 10 scales": (var, 680, weights(VAR_D, VAR_L))}
    for name, (macs, tokens, params) in rows.items():
        line = (f"{name:24s} {len(macs):>6,} {2 * tokens:>9,} {2 * sum(macs) / 1e12:>11.2f} "
                f"{ms(macs, params):>7.0f}")
        assert line in out, line
    assert "DiT-XL/2, 250 steps         250   128,000" in out


def test_glued_values():
    dit, raster, same, var = passes()
    g = chapter_outputs.cell_glue(chapter_outputs.notebook("serving_operations"), MARKER)
    assert g["so_dva_dit_gmacs"] == f"{dit[0] / 1e9:.0f}"
    assert g["so_dva_work_ratio"] == f"{sum(dit) / sum(raster):.0f}"
    assert g["so_dva_dit_ms"] == f"{ms(dit, weights(DIT_D, DIT_L)):.0f}"
    assert g["so_dva_ar_ms"] == f"{ms(raster, weights(VAR_D, VAR_L)):.0f}"
    assert g["so_dva_var_ms"] == f"{ms(var, weights(VAR_D, VAR_L)):.0f}"
    assert g["so_dva_ridge"] == f"{PEAK / BW:.0f}"
    assert g["so_dva_batch"] == str(math.ceil(PEAK / BW / 2))
    assert g["so_dva_ar_gb"] == f"{2 * weights(VAR_D, VAR_L) / 1e9:.1f}"
    assert g["so_dva_music_steps"] == "1,500" and g["so_dva_music_tokens"] == "6,000"
    assert g["so_dva_same_ms"] == f"{ms(same, weights(DIT_D, DIT_L)):.0f}"
    batch = math.ceil(PEAK / BW / 2)
    kv_gb = 2 * batch * 2 * VAR_L * VAR_D * 2 * (sum(range(1, 257)) / 256) / 1e9  # rows x (K, V) x layers x d x bf16
    assert g["so_dva_kv_gb"] == f"{kv_gb:.1f}" and kv_gb > 2 * weights(VAR_D, VAR_L) / 1e9  # KV outweighs weights
    assert g["so_dva_dit_c_ms"] == f"{1e3 * 2 * 2 * dit[0] / PEAK:.2f}"
    assert g["so_dva_dit_w_ms"] == f"{1e3 * 2 * weights(DIT_D, DIT_L) / BW:.2f}"
    # a same-size raster AR beats DiT at batch 1: the ranking is set by model size
    assert ms(same, weights(DIT_D, DIT_L)) < ms(dit, weights(DIT_D, DIT_L))
    # the claims the prose makes from them: diffusion does more work yet is faster at batch 1
    assert sum(dit) > 50 * sum(raster) and ms(dit, weights(DIT_D, DIT_L)) < ms(raster, weights(VAR_D, VAR_L))


def test_section_cites_its_sources():
    text = chapter_outputs.section(chapter_outputs.notebook("serving_operations"), "serving_operations-diffusion-vs-ar",
                                   end="serving_operations-vision-engine-ideas")
    chapter_outputs.assert_cited(text, ["radford2019gpt2", "ho2020ddpm", "song2021sde", "li2024mar", "peebles2023dit", "tian2024var",
                                        "yu2022parti", "borsos2022audiolm", "audiocraft"])
    for ref in ("serving_operations-diffusion", "serving_operations-diffusion-lm", "serving_operations-video-dit"):
        assert "{ref}`" + ref + "`" in text
    assert "In the interview" in text and "[E] Drill" in text and ":class: dropdown followup" in text
    assert "MusicGen, 30 s: 1,500 steps of 4 codebook tokens = 6,000 tokens" in chapter_outputs.printed(
        chapter_outputs.notebook("serving_operations"), MARKER)
