"""Section scheduler_design-preempt-offload, recomputed from the formulas and the sources' constants.

Llama 3 8B written out (32 layers, d 4096, 32 query and 8 KV heads of 128, d_ff 14336, vocabulary 128256); H100
SXM data sheet: 989 TFLOP/s dense bf16, 3.35 TB/s HBM; PCIe Gen5 x16: 64 GB/s each way. The section's
assumptions: prefill at 50% of peak, copies at 25 GB/s, 16-token blocks, the last token never a hit
(KVCacheManager.get_computed_blocks in vLLM 0.10.1.1).
"""
import chapter_outputs

L, D, H, KV, HD, FF, V = 32, 4096, 32, 8, 128, 14336, 128_256
PEAK, HBM_BW, LINK_PEAK = 989e12, 3.35e12, 64e9
MFU, LINK = 0.5, 25e9
N, GPU_HIT, BLOCK = 6000, 4000, 16
KV_TOKEN = 2 * L * KV * HD * 2
PER_TOKEN = L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF)  # weight multiply-adds per token


def flops(n):  # causal prefill: weights once per token, logits of the last token, scores and mix
    return 2 * n * PER_TOKEN + 2 * V * D + L * 2 * H * HD * n * (n + 1)


def gpu_s(done):
    weights = 2 * (PER_TOKEN + 2 * V * D + (2 * L + 1) * D)  # bf16 weights with embedding, head and norms
    return max((flops(N) - (flops(done) if done else 0)) / (MFU * PEAK), weights / HBM_BW)


def glue():
    return chapter_outputs.cell_glue(chapter_outputs.notebook("scheduler_design"), "po_n, po_gpu_hit")


def test_whole_blocks_below_the_last_token():
    full = (N - 1) // BLOCK * BLOCK
    assert full == 5984
    assert glue()["sd_po_full"] == "5,984"


def test_recompute_times():
    g = glue()
    full = 5984
    for key, done in (("all", 0), ("hit", GPU_HIT), ("conn", full), ("both", full)):
        assert g[f"sd_po_gpu_{key}"] == f"{1e3 * gpu_s(done):.1f}"
        assert g[f"sd_po_tail_{key}"] == f"{N - done:,}"
    assert 0.33 < gpu_s(GPU_HIT) / gpu_s(0) < 0.4  # the tail attends to the whole context


def test_copy_times():
    g = glue()
    assert g["sd_po_copy_all"] == g["sd_po_copy_hit"] == "0.0"
    assert g["sd_po_copy_conn"] == f"{1e3 * 5984 * KV_TOKEN / LINK:.1f}"
    assert g["sd_po_copy_both"] == f"{1e3 * (5984 - GPU_HIT) * KV_TOKEN / LINK:.1f}"
    assert g["sd_po_peak"] == f"{1e3 * 5984 * KV_TOKEN / LINK_PEAK:.1f}"
    assert g["sd_po_cache"] == "750 MiB" and N * KV_TOKEN == 750 * 2**20
