"""Section deployment_plan-70b-four-a100 of "Plan a deployment": Llama 3 70B on four A100 80GB.

The four layouts' weights per GPU, cache tokens per replica at a 90% budget, batch-1 floors, all-reduce
costs, one 8K sequence's cache read and 4K prefill floors, recomputed from the A100 datasheet's rates and
Llama 3 70B's shape written out (not through the chapter's cell or mk), and NCCL's latency constants.
"""
import chapter_outputs

# Llama 3 70B (config.json): 80 layers, d 8192, 8 KV heads of 128, vocabulary 128256
L, D, KV, HD, V = 80, 8192, 8, 128, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
HBM, BW, BF16, INT8 = 80e9, 2.039e12, 312e12, 624e12  # A100 80GB SXM datasheet
NVLINK3 = 600e9 / 2  # each way
KV_TOKEN = 2 * L * KV * HD * 2  # bf16 K and V, bytes a token
W4_BITS = 4 + 16 / 128  # int4, one fp16 scale per 128 weights
LAYOUTS = {"bf16": (4, 16, BF16), "int8": (2, 8, INT8), "fp8": (2, 8, BF16), "w4": (1, W4_BITS, BF16),
           "tp4int8": (4, 8, INT8), "tp4w4": (4, W4_BITS, BF16)}

NB = chapter_outputs.notebook("deployment_plan")


def glued(key):
    return chapter_outputs.glued(NB, key)


def row(key):
    t, bits, rate = LAYOUTS[key]
    w = P70 * bits / 8 / t
    tokens = int((0.9 * HBM - w) // (KV_TOKEN // t))
    fixed = 1e-6 * (6.6 + 2 * (t - 1) * 0.6)  # NCCL 2.30.7 tuning.cc: ring LL base + 2 (t - 1) NVLink steps
    ar = 0.0 if t == 1 else 2 * L * (fixed + 2 * (t - 1) * (D // t) * 2 / NVLINK3)
    return w, tokens, w / BW, ar, 8192 * KV_TOKEN / t / BW, 2 * P70 * 4096 / (t * rate)


def test_cache_token_is_320_kib():
    assert KV_TOKEN == 320 * 1024
    # the prose types the product by hand, in the answer and in the Trap: read it against KV_TOKEN
    text = chapter_outputs.section(NB, "deployment_plan-70b-four-a100", end="deployment_plan-pcie-cards")
    assert f"$2 \\times {L} \\times {KV} \\times {HD} \\times 2 = {KV_TOKEN // 1024}$ KiB" in text
    assert f"whole {KV_TOKEN // 1024} KiB" in text


def test_cache_tokens_exact():
    assert [row(k)[1] for k in LAYOUTS] == [448_280, 224_140, 224_140, 108_705, 663_593, 767_885]
    assert [glued(f"a1_{k}_tok") for k in LAYOUTS] == [f"{row(k)[1]:,}" for k in LAYOUTS]
    # the node holds (almost) the same cache in every layout: replicas x tokens per replica
    assert row("bf16")[1] == 2 * row("int8")[1]
    assert glued("a1_bf16_seqs") == str(448_280 // 8192) == "54"
    assert glued("a1_w4_seqs") == str(108_705 // 8192) == "13"


def test_weights_and_floors():
    got = {k: (f"{row(k)[0] / 1e9:.1f}", f"{1e3 * row(k)[2]:.1f}") for k in LAYOUTS}
    assert got == {"bf16": ("35.3", "17.3"), "int8": ("35.3", "17.3"), "fp8": ("35.3", "17.3"),
                   "w4": ("36.4", "17.8"), "tp4int8": ("17.6", "8.7"), "tp4w4": ("9.1", "4.5")}
    for k, (gb, floor) in got.items():
        assert (glued(f"a1_{k}_gb"), glued(f"a1_{k}_floor")) == (gb, floor)


def test_all_reduce_cache_and_prefill():
    for k in LAYOUTS:
        _, _, floor, ar, cache, prefill = row(k)
        assert glued(f"a1_{k}_ar") == f"{1e3 * ar:.2f}"
        assert glued(f"a1_{k}_cache") == f"{1e3 * cache:.2f}"
        assert glued(f"a1_{k}_prefill") == f"{1e3 * prefill:,.0f}"
    assert [glued(f"a1_{k}_prefill") for k in LAYOUTS] == ["463", "463", "926", "1,852", "232", "463"]
    assert glued("a1_ar_share") == f"{row('bf16')[3] / row('bf16')[2]:.0%}" == "10%"


def test_embedding_and_head_in_bf16():
    assert glued("a1_head_gb") == f"{2 * V * D * (2 - W4_BITS / 8) / 1e9:.1f}" == "3.1"


def test_section_placed_after_vendor_choice_and_links_it():
    text = chapter_outputs.section(NB, "deployment_plan-70b-four-a100", end="deployment_plan-pcie-cards")
    assert "{ref}`deployment_plan-vendor-choice`" in text
    assert "{ref}`weight_quantization-ampere`" in text
    order = [s for c in NB["cells"] for s in ["".join(c["source"])]
             if s.startswith(("(deployment_plan-vendor-choice)=", "(deployment_plan-70b-four-a100)=",
                              "(deployment_plan-pcie-cards)="))]
    assert [s.split(")=")[0][1:] for s in order] == ["deployment_plan-vendor-choice", "deployment_plan-70b-four-a100",
                                                     "deployment_plan-pcie-cards"]
    assert "mk.GPUS[\"a100-80gb\"]" in text


def test_tp4_int4_step_keeps_the_all_reduce():
    bf16 = 1e3 * (row("bf16")[2] + row("bf16")[3])
    w4 = 1e3 * (row("tp4w4")[2] + row("tp4w4")[3])
    assert (glued("a1_bf16_step"), glued("a1_tp4w4_step")) == (f"{bf16:.1f}", f"{w4:.1f}") == ("18.9", "6.1")
    assert glued("a1_step_ratio") == f"{bf16 / w4:.1f}" == "3.1"
    assert glued("a1_floor_ratio") == f"{row('bf16')[2] / row('tp4w4')[2]:.1f}" == "3.9"
    assert glued("a1_budget_gb") == f"{0.9 * HBM / 1e9:.0f}" == "72"
    assert glued("a1_bf16_free_gb") == f"{(0.9 * HBM - row('bf16')[0]) / 1e9:.1f}" == "36.7"
