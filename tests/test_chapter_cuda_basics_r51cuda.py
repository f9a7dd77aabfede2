"""Sections cuda_basics-qualifiers, cuda_basics-simd-simt and cuda_basics-tiled-sgemm.

Recomputed from the constants written out here, not through mha_kit: the H100 SXM's per-SM limits (Hopper
Tuning Guide sec. 1.4.1.1: 65,536 registers, 64 warps, 228 KB of shared memory), its 132 SMs, 67 TFLOPS FP32
and 3.35 TB/s (datasheet), the A100's 108 SMs, the 1 KiB CUDA reserves per block, the tile configuration of
siboehm/SGEMM_CUDA's runSgemm2DBlocktiling (src/runner.cu: BM = BN = 128, BK = TM = TN = 8) and register
counts read from ptxas (CUDA 13.0 V13.0.88, -arch=sm_90 --resource-usage) when the section was written."""
import math
import re

import chapter_outputs as co

NB = co.notebook("cuda_basics")
REGS, SMEM_SM, WARPS, SMS, SMS_A100 = 65_536, 228 * 1024, 64, 132, 108
FP32, HBM = 67e12, 3.35e12
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
PTXAS = {"this listing": 149, "SGEMM_CUDA kernel 5": 96, "listing, __launch_bounds__(256, 2)": 128}


def _degree(words, banks=32):
    """Replays of one warp's shared-memory access: the most distinct 4-byte words that fall in one bank."""
    per_bank = {}
    for w in words:
        per_bank.setdefault(w % banks, set()).add(w)
    return max(len(s) for s in per_bank.values())


def _resident(threads, regs, smem):
    return min(REGS // (threads * regs), SMEM_SM // (smem + 1024), WARPS * 32 // threads)


def test_sgemm_budget():
    threads = (BM // TM) * (BN // TN)
    smem = 4 * (BM * BK + BK * BN)
    g = co.cell_glue(NB, "PTXAS_REGS = ")
    assert threads == 256 and smem == 8192 == 8 * 1024
    assert g["cb_sg_smem"] == "8,192"
    assert g["cb_sg_regs_data"] == str(TM * TN + TM + TN) == "80"
    assert g["cb_sg_intensity"] == f"{2 * BM * BN / ((BM + BN) * 4):.0f}" == "32"
    assert g["cb_sg_ridge"] == f"{FP32 / HBM:.0f}" == "20"
    assert g["cb_sg_small_smem"] == f"{(64 + 64) * BK * 4:,}" == "4,096"
    assert g["cb_sg_small_intensity"] == f"{2 * 64 * 64 / (128 * 4):.0f}" == "16"


def test_bank_conflicts_of_warp_zero():
    lanes = range(32)
    a_words = [(lane // (BN // TN)) * TM * BK for lane in lanes]  # As[ty*TM][0] in a row-major As[BM][BK]
    b_words = [(lane % (BN // TN)) * TN for lane in lanes]  # Bs[0][tx*TN]
    g = co.cell_glue(NB, "PTXAS_REGS = ")
    assert g["cb_sg_a_conf"] == str(_degree(a_words)) == "2"
    assert g["cb_sg_b_conf"] == str(_degree(b_words)) == "4"


def test_occupancy_lines():
    text = co.printed(NB, "PTXAS_REGS = ")
    for name, regs in PTXAS.items():
        fit = _resident(256, regs, 8192)
        line = (f"{name:35s}: {regs:3d} registers -> blocks per SM: registers {REGS // (256 * regs)}, "
                f"shared {SMEM_SM // (8192 + 1024)}, warps {WARPS * 32 // 256}; resident {fit} = {fit * 8} of 64 warps")
        assert line in text, line
    g = co.cell_glue(NB, "PTXAS_REGS = ")
    assert g["cb_sg_blocks"] == "1" and g["cb_sg_warps"] == "8" and g["cb_sg_blocks_k5"] == "2"
    blocks = (4096 // BN) * (4096 // BM)
    assert f"{blocks:,} blocks over 132 SMs x 1 = {math.ceil(blocks / SMS)} waves" in text
    assert f"{blocks / (math.ceil(blocks / SMS) * SMS):.1%}" in text


def test_listing_matches_the_cell_and_guards_its_edges():
    text = co.section(NB, "cuda_basics-tiled-sgemm", end="cuda_basics-convolution")
    listing = text.split("```c++", 1)[1].split("```", 1)[0]
    assert "template <int BM = 128, int BN = 128, int BK = 8, int TM = 8, int TN = 8>" in listing
    assert listing.count("__syncthreads();") == 2
    assert "if (m < M && n < N)" in listing  # the store guard
    assert listing.count("? A[") == 1 and listing.count("? B[") == 1  # zero-filled loads
    assert listing.count("#pragma unroll") >= 6
    g = co.cell_glue(NB, "PTXAS_REGS = ")
    assert g["cb_sg_regs"] == str(PTXAS["this listing"]) and g["cb_sg_regs_lb2"] == "128"
    assert (g["cb_sg_spill_st"], g["cb_sg_spill_ld"]) == ("24", "28")  # ptxas, CUDA 13.0, sm_90
    assert "{glue:text}`cb_sg_regs`" in text and "512-byte" not in text
    co.assert_cited(text, ["nvidiahoppertuning", "volkov2010lowoccupancy"])
    co.assert_cited(text, ["sgemmcuda"])
    co.assert_links(text, ["gpu_kernels-gemm-ladder", "gpu_kernels-occupancy", "cuda_basics-bank-conflicts"])


def test_same_grid_on_three_sm_counts():
    g = co.cell_glue(NB, "grid_blocks, resident = ")
    waves = {sms: math.ceil(65_536 / (sms * 8)) for sms in (SMS, SMS_A100, SMS // 2)}
    assert g["cb_simt_waves_h100"] == str(waves[SMS]) == "63"
    assert g["cb_simt_waves_half"] == str(waves[SMS // 2]) == "125"
    assert f"108 SMs -> {waves[SMS_A100]} waves" in co.printed(NB, "grid_blocks, resident = ")


def test_qualifier_table_and_simt_text():
    text = co.section(NB, "cuda_basics-qualifiers", end="cuda_basics-strides")
    rows = re.findall(r"^\| `([^`]+)` \| (function|variable|pointer) \|", text, re.M)
    assert [r[0] for r in rows] == ["__global__", "__device__", "__host__", "__host__ __device__", "__device__",
                                    "__constant__", "__shared__", "__managed__", "__restrict__"]
    co.assert_cited(text, ["cudaguide"])
    co.assert_links(text, ["cuda_basics-unified-memory", "cuda_basics-constant-texture", "cuda_basics-local-memory"])
    simt = co.section(NB, "cuda_basics-simd-simt", end="cuda_basics-bank-conflicts")
    assert "expose the SIMD width to the software" in simt
    assert "The chapter's kernels write" not in text and "`a[0] * b[0]` is computed once" in text
    co.assert_links(simt, ["cuda_basics-divergence", "cuda_basics-block-one-sm", "cuda_basics-launch-config",
                           "cuda_basics-grid-sync"])


def test_warp_loads_and_shared_memory_cap():
    """A warp's global loads (warp 0, r = 0) and FP32 issue against shared wavefronts per warp per k.

    H100: 128 FP32 lanes an SM and 32 banks x 4 B = 128 B of shared memory a clock (Hopper Tuning Guide)."""
    g = co.cell_glue(NB, "PTXAS_REGS = ")
    lanes = list(range(32))
    a_rows = {i // BK for i in lanes}  # As: m = i / BK
    b_cols = sorted(i % BN for i in lanes)  # Bs: n = i % BN, k = i / BN = 0 for every lane
    assert all(i // BN == 0 for i in lanes) and b_cols == list(range(b_cols[0], b_cols[-1] + 1))
    assert g["cb_sg_warp_b_bytes"] == str(4 * len(b_cols)) == "128"
    assert g["cb_sg_warp_a_runs"] == str(len(a_rows)) == "4" and g["cb_sg_warp_a_run_bytes"] == str(4 * BK)
    fma = TM * TN * 32 / 128
    a_deg = _degree([(lane // (BN // TN)) * TM * BK for lane in lanes])
    b_deg = _degree([(lane % (BN // TN)) * TN for lane in lanes])
    wave = TM * a_deg + TN * b_deg
    assert g["cb_sg_fma_clocks"] == f"{fma:.0f}" == "16" and g["cb_sg_smem_clocks"] == str(wave) == "48"
    assert g["cb_sg_smem_frac"] == f"{fma / wave:.0%}" == "33%"
