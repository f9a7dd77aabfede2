"""Sections gpu_kernels-memory-hierarchy (a measured L2 bandwidth) and gpu_kernels-falsify-bandwidth-bound
(what would refute "decode is bandwidth-bound"), recomputed from the primary figures: te42kyfo/gpu-benches
gpu-l2-cache stored results at commit 1c36d50, the H100 SXM datasheet (3.35 TB/s, 989 dense bf16 TFLOPS),
and Llama 3 8B's published shape (32 layers, d 4096, FFN 14336, 32 query and 8 KV heads of 128, vocabulary
128256, untied embeddings)."""
import chapter_outputs

HBM, BF16 = 3.35e12, 989e12
SMEM = 132 * 128 * 67e12 / (132 * 128 * 2)  # 132 SMs x 32 banks x 4 B a clock at the FP32 peak's clock


def _cell(marker):
    """What the code cell containing ``marker`` printed, and the values it glued."""
    nb = chapter_outputs.notebook("gpu_kernels")
    return chapter_outputs.printed(nb, marker), chapter_outputs.cell_glue(nb, marker)


def _llama8_params():
    layers, d, ffn, kv_heads, head, vocab = 32, 4096, 14336, 8, 128, 128256
    attn = d * d * 2 + 2 * d * kv_heads * head
    return layers * (attn + 3 * d * ffn + 2 * d) + 2 * vocab * d + d


def _llama8_streamed():
    """A decode step reads one row of the (vocab, d) input embedding, not the table."""
    return _llama8_params() - 128256 * 4096


def test_l2_bandwidth_lines_and_glue():
    text, glued = _cell("l2_runs = {")
    runs = {"H100 PCIe": (6912.2e9, 1988.2e9), "H200": (9765.2e9, 3887.3e9)}  # h100_pcie.txt, h200.txt
    for card, (l2, dram) in runs.items():
        assert f"L2 {l2 / 1e12:4.1f} TB/s, DRAM {dram / 1e12:4.2f} TB/s (both measured): L2 = {l2 / dram:.1f}x DRAM" \
            in text, card
    lo, hi = runs["H100 PCIe"][0], runs["H200"][0]
    assert f"{lo / HBM:.1f}x to {hi / HBM:.1f}x; shared memory's {SMEM / 1e12:.1f} TB/s is " \
           f"{SMEM / hi:.1f}x to {SMEM / lo:.1f}x the L2 rate" in text
    assert glued == {"gk_l2_bw_lo": "6.9", "gk_l2_bw_hi": "9.8", "gk_l2_vs_hbm_lo": "2.1", "gk_l2_vs_hbm_hi": "2.9",
                     "gk_l2_pcie_ratio": "3.5"}
    assert 2 < hi / HBM < 3 and lo < hi < SMEM  # the hierarchy's order holds with the measured L2


def test_falsification_predictions():
    text, glued = _cell("attn_flops = 4 * LLAMA8.num_layers")
    params, ctx = _llama8_streamed(), 4096
    kv_token = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads of 128, bf16
    attn = 4 * 32 * 32 * 128 * ctx
    t = {}
    for batch in (1, 32):
        nbytes = 2 * params + kv_token * ctx * batch
        flops = batch * (2 * params + attn)
        t[batch] = nbytes / HBM
        assert f"batch {batch:2d}: {nbytes / 1e9:5.1f} GB, {flops / 1e12:5.2f} TFLOP, I = {flops / nbytes:5.1f} " \
               f"FLOP/B; bytes/BW {t[batch] * 1e3:5.2f} ms, FLOPs/peak {flops / BF16 * 1e3:5.3f} ms" in text
        assert flops / nbytes < BF16 / HBM  # below the ridge at both batches: the claim is plausible a priori
    assert f"grows {t[32] / t[1]:.2f}x (its bytes); a compute-bound one up to 32x" in text
    nbytes1 = 2 * params + kv_token * ctx
    assert glued == {"gk_fb_t1": f"{t[1] * 1e3:.2f}", "gk_fb_gb": f"{nbytes1 / 1e9:.1f}",
                     "gk_fb_10ms": f"{nbytes1 / 10e-3 / HBM:.0%}", "gk_fb_half": f"{2 * t[1] * 1e3:.1f}",
                     "gk_fb_grow": f"{t[32] / t[1]:.2f}", "gk_fb_gb2": f"{2 * nbytes1 / 1e9:.0f}",
                     "gk_fb_kv_share": f"{kv_token * ctx / nbytes1:.0%}"}
    assert f"the KV cache is {kv_token * ctx / nbytes1:.1%} of the step's bytes" in text
    assert 15.5e9 < nbytes1 < 15.6e9  # the embedding table is not streamed (16.6 GB if it were)
