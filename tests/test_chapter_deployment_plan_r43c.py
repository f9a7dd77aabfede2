"""Section deployment_plan-four-a100-40-or-one-h100 of "Plan a deployment".

Llama 3 70B on four A100 40GB at TP4 (bf16 and 8-bit) against one H100 80GB (FP8 and W4A16): weights and cache
left per GPU, cache tokens, and the batch-1 floor plus the TP4 all-reduces. Recomputed from Llama 3 70B's shape
written out, the A100 and H100 datasheets, the nvidia-smi totals and NCCL's latency constants, not through mk.
"""
import pathlib

import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"

# Llama 3 70B (config.json): 80 layers, d 8192, 64 query heads and 8 KV heads of 128, FFN 28672, vocabulary 128256
L, D, H, KV, HD, FF, V = 80, 8192, 64, 8, 128, 28_672, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
EMB_HEAD = 2 * V * D  # embedding + lm_head, kept in bf16 by 8- and 4-bit checkpoints
KV_TOKEN = 2 * L * KV * HD * 2  # bf16 K and V of one token, bytes
A100_TOTAL, A100_BW = 40_960 * 2**20, 1.555e12  # nvidia-smi total (driver 570); datasheet HBM2 bandwidth
H100_TOTAL, H100_BW = 81_559 * 2**20, 3.35e12
NVLINK3 = 300e9  # 600 GB/s a GPU both ways
SHARE, RESERVE, STEP, TP = 0.9, 1.0e9, 8192, 4
NB = chapter_outputs.notebook("deployment_plan")


def glued(key):
    return chapter_outputs.glued(NB, key)


def weights(bits):
    return P70 * 2 if bits == 16 else (P70 - EMB_HEAD) * bits / 8 + EMB_HEAD * 2


def act(tokens, tp):  # residual stream whole; q, k, v and the gate and up intermediates split over tp; bf16
    return 2 * tokens * (D + (H + 2 * KV) * HD // tp + 2 * FF // tp)


def all_reduce_s(tp):  # two a layer; NCCL ring LL: 6.6 us + 2 (tp - 1) x 0.6 us, plus the ring's bytes
    return 2 * L * (1e-6 * (6.6 + 2 * (tp - 1) * 0.6) + 2 * (tp - 1) * (D // tp) * 2 / NVLINK3)


def a100(bits, tp=TP, total=A100_TOTAL):
    w = weights(bits) / tp
    left = SHARE * total - w - act(STEP, tp) - RESERVE
    return w, left, max(0, int(left // (KV_TOKEN // tp))), w / A100_BW + all_reduce_s(tp)


def h100(bits):
    w = weights(bits)
    left = SHARE * H100_TOTAL - w - act(STEP, 1) - RESERVE
    return w, left, int(left // KV_TOKEN), w / H100_BW


def test_a100_rows():
    for key, bits in (("a_bf16", 16), ("a_int8", 8), ("a_w4", 4 + 16 / 128)):
        w, left, tokens, ms = a100(bits)
        assert glued(f"fh_{key}_gb") == f"{w / 1e9:.1f}"
        assert glued(f"fh_{key}_left") == f"{left / 1e9:.2f}"
        assert glued(f"fh_{key}_tok") == f"{tokens:,}"
        assert glued(f"fh_{key}_ms") == f"{1e3 * ms:.1f}"
    assert glued("fh_a_bf16_gb") == "35.3" and glued("fh_a_bf16_floor") == f"{1e3 * a100(16)[0] / A100_BW:.1f}"
    assert glued("fh_ar") == f"{1e3 * all_reduce_s(TP):.2f}"
    assert glued("fh_budget_gb") == f"{SHARE * A100_TOTAL / 1e9:.1f}"
    assert glued("fh_a_bf16_seqs") == f"{a100(16)[2] // 4096}"


def test_h100_rows():
    for key, bits in (("h_fp8", 8), ("h_w4", 4 + 16 / 128)):  # W4A16: an fp16 scale per 128 weights
        w, left, tokens, ms = h100(bits)
        assert glued(f"fh_{key}_gb") == f"{w / 1e9:.1f}"
        assert glued(f"fh_{key}_tok") == f"{tokens:,}"
        assert glued(f"fh_{key}_ms") == glued(f"fh_{key}_floor") == f"{1e3 * ms:.1f}"
    assert h100(16)[1] < 0  # bf16 does not fit on one H100


def test_verdict_holds():
    bf16_a, int8_a, fp8_h, w4_h = a100(16), a100(8), h100(8), h100(4 + 16 / 128)
    assert 0 < bf16_a[2] < w4_h[2] < int8_a[2]  # the bf16 A100 cache is the smallest that fits
    assert w4_h[3] < int8_a[3] < fp8_h[3] < bf16_a[3]  # W4A16 on one H100 has the lowest floor
    assert glued("fh_w4_over_bf16") == f"{w4_h[2] / bf16_a[2]:.1f}"
    assert glued("fh_agg_tbs") == f"{TP * A100_BW / 1e12:.1f}"
    # the prose's verdicts, each next to the ordering that makes it true
    prose = " ".join(chapter_outputs.section(NB, "deployment_plan-four-a100-40-or-one-h100",
                                             kinds=("markdown",)).split())
    assert h100(16)[1] < 0 and "One H100 cannot hold bf16 weights at all" in prose
    assert "**At bf16 quality only the four A100s run the model, and barely.**" in prose
    assert "If it must be bf16, it is four A100s, with a cache too small for real batches." in prose
    w4_a = a100(4 + 16 / 128)
    assert w4_a[3] < w4_h[3] and w4_a[2] > w4_h[2]  # four A100s in W4A16: faster and more cache
    assert ("At equal precision the four A100s win both numbers: {glue:text}`fh_a_w4_ms` ms against "
            "{glue:text}`fh_h_w4_ms`") in prose
    assert fp8_h[2] < w4_h[2]  # FP8 on one H100 keeps the least cache of the H100 rows
    assert "One H100 in FP8 runs at {glue:text}`fh_h_fp8_ms` ms but keeps only {glue:text}`fh_h_fp8_tok`" in prose


def test_section_placement_and_links():
    text = (BOOK / "deployment_plan.ipynb").read_text(encoding="utf-8")
    start = text.index("(deployment_plan-four-a100-40-or-one-h100)=")
    assert text.index("(deployment_plan-70b-four-a100)=") < start < text.index("(deployment_plan-pcie-cards)=")
    for label in ("deployment_plan-70b-one-gpu-memory", "deployment_plan-70b-four-a100"):
        assert f"{{ref}}`{label}`" in text[start:text.index("(deployment_plan-pcie-cards)=")]


W4 = 4 + 16 / 128  # int4 and an fp16 scale per 128 weights


def test_equal_precision_a100_wins():
    a_w4, h_w4, a_int8 = a100(W4), h100(W4), a100(8)
    assert a_w4[3] < h_w4[3] and a_w4[2] > 2 * h_w4[2]  # at 4 bits on both, faster and a larger cache
    assert glued("fh_a_w4_over_h_w4") == f"{a_w4[2] / h_w4[2]:.1f}"
    assert glued("fh_int8_over_h_w4") == f"{a_int8[2] / h_w4[2]:.1f}"
    assert glued("fh_h_w4_pcie_floor") == f"{1e3 * h_w4[0] / 2.0e12:.1f}"
    assert glued("fh_prefill_ratio") == f"{4 * 312 / 989:.2f}"
    assert glued("fh_prefill_fp8_ratio") == f"{1979 / (4 * 312):.2f}"
    fp8_left = h100(8)[1]
    assert glued("fh_h_fp8_tok_kv8") == f"{int(fp8_left // (KV_TOKEN // 2)):,}"


def test_pcie_tp2_fallback():
    total = 40_536 * 2**20  # PCIe A100 40GB on older drivers
    int8, w4 = a100(8, 2, total), a100(W4, 2, total)
    assert int8[2] < 4096 < w4[2]  # 8-bit leaves less than one 4K request; W4A16 leaves room
    for key, row in (("int8", int8), ("w4", w4)):
        assert glued(f"fh_tp2_{key}_gb") == f"{row[0] / 1e9:.1f}"
        assert glued(f"fh_tp2_{key}_left") == f"{row[1] / 1e9:.2f}"
        assert glued(f"fh_tp2_{key}_tok") == f"{row[2]:,}"
