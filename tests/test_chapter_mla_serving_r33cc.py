"""Section mla_serving-split-latent of "MLA as it is served".

The score all-reduce of a latent split across 8 tensor-parallel ranks, for DeepSeek-V3 (config.json: 128
heads, kv_lora_rank 512, qk_rope_head_dim 64, 61 layers) at batch 64 and 8K context in fp32, over NVLink 4
(H100 whitepaper: 900 GB/s both ways, 450 GB/s each way) with a ring's 2 (t - 1) / t, against the bf16 latent
read at the H100 SXM's 3.35 TB/s; written out here, not through mha_kit.
"""
import chapter_outputs

NB = chapter_outputs.notebook("mla_serving")
B, N, TP = 64, 8192, 8
HEADS, D_C, D_R, LAYERS = 128, 512, 64, 61
NVLINK, HBM = 450e9, 3.35e12
SCORES = B * HEADS * N * 4
RING = 2 * (TP - 1) / TP
LATENT = B * N * (D_C + D_R) * 2


def test_exact_sizes():
    assert SCORES == 268_435_456 == 256 * 2**20
    assert LATENT == 576 * 2**20
    assert chapter_outputs.glued(NB, "mla_split_scores") == "256 MiB"


def test_times():
    floor, ring = SCORES / NVLINK, RING * SCORES / NVLINK
    assert chapter_outputs.glued(NB, "mla_split_floor") == f"{floor * 1e3:.1f}" == "0.6"
    assert chapter_outputs.glued(NB, "mla_split_step") == f"{floor * LAYERS * 1e3:.0f}" == "36"
    assert chapter_outputs.glued(NB, "mla_split_step_ring") == f"{ring * LAYERS * 1e3:.0f}" == "64"
    assert chapter_outputs.glued(NB, "mla_split_read") == f"{LATENT / HBM * 1e3:.2f}" == "0.18"
    assert chapter_outputs.glued(NB, "mla_split_ratio") == f"{ring / (LATENT / TP / HBM):.0f}" == "46"


def test_against_the_read_saved():
    saved = LATENT / HBM * (1 - 1 / TP)  # the whole latent's read less the rank's remaining eighth
    ring = RING * SCORES / NVLINK
    assert chapter_outputs.glued(NB, "mla_split_saved") == f"{saved * 1e3:.2f}" == "0.16"
    assert chapter_outputs.glued(NB, "mla_split_vs_saved") == f"{ring / saved:.1f}" == "6.6"
    assert "0.158 ms; all-reduce / saving: 3.8 (link rate) to 6.6 (ring)" in chapter_outputs.printed(NB, "scores_bytes = batch")


def test_printed_lines():
    out = chapter_outputs.printed(NB, "scores_bytes = batch")
    assert "256 MiB; 0.60 ms at the link rate, 1.04 ms as a ring" in out
    assert "576 MiB, 0.18 ms from HBM" in out and "72 MiB, 22.5 us from HBM" in out
