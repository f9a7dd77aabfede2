"""Sections deployment_plan-70b-one-gpu-memory (fragmentation, single-stream speed) and
deployment_plan-r1-two-nodes of "Plan a deployment".

Recomputed from the models' shapes written out (Llama 3 70B and DeepSeek-V3 config.json), the H100 SXM
datasheet's 3.35 TB/s and NCCL 2.30.7's tuner constants (tuning.cc), not through the kit's functions.
"""
import math
import re

import chapter_outputs

# Llama 3 70B (config.json): 80 layers, d 8192, 8 KV heads of 128, vocabulary 128256
L, D, KV, HD, V = 80, 8192, 8, 128, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
BW, NDR = 3.35e12, 400e9 / 8  # H100 SXM HBM3; one 400 Gb/s NDR port
KV_TOK = 2 * L * KV * HD * 2  # bf16 K and V, bytes a token

# DeepSeek-V3 (config.json): 61 layers, d 7168, 128 heads, q_lora 1536, kv_lora 512, rope 64, nope 128, v 128
L3, D3, H3, QL, KL, R, NOPE, VH = 61, 7168, 128, 1536, 512, 64, 128, 128
V3_VOCAB, FF_DENSE, FF_MOE, DENSE, ACTIVE_EXPERTS = 129_280, 18_432, 2048, 3, 9  # 8 routed + 1 shared


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("deployment_plan"), key)


def test_fragmentation_bound():
    per_seq = 15 * KV_TOK
    assert per_seq == 4_915_200
    assert glued("ogf_seq_mib") == f"{per_seq / 2**20:.2f}" == "4.69"
    assert glued("ogf_slots") == "15"
    n = int(glued("og_w4a16_8192_tok").replace(",", "")) // 8192
    assert glued("ogf_n") == str(n)
    assert glued("ogf_all_mib") == f"{n * per_seq / 2**20:.0f}"
    left = float(glued("og_w4a16_8192_left")) * 1e9
    assert abs(float(glued("ogf_share").rstrip("%")) / 100 - n * per_seq / left) < 1e-4


def test_single_stream_speed():
    emb_head = 2 * V * D  # parameters kept in bf16 by the FP8 and int4 checkpoints
    for name, bits in (("fp8", 8.0), ("w4a16", 4 + 16 / 128)):
        read = (P70 - emb_head) * bits / 8 + V * D * 2 + 4096 * KV_TOK  # layers, bf16 head, 4K of cache
        t = read / BW
        assert glued(f"ogs_{name}_gb") == f"{read / 1e9:.1f}"
        assert glued(f"ogs_{name}_ms") == f"{1e3 * t:.1f}"
        assert glued(f"ogs_{name}_tps") == f"{1 / t:.0f}"
        assert glued(f"ogs_{name}_real") == f"{0.5 / t:.0f}"
    assert (glued("ogs_fp8_tps"), glued("ogs_w4a16_tps")) == ("47", "86")
    w4 = ((P70 - emb_head) * 4.125 / 8 + V * D * 2 + 4096 * KV_TOK) / BW
    assert glued("ogs_measured_mbu") == f"{30 * w4:.2f}"
    assert glued("ogs_zero_bits") == f"{4 / 128:.2f}" == "0.03"  # a 4-bit zero point per 128 weights


def nccl_us(nodes):  # the cheaper of ring and tree, LL protocol, 8 GPUs a node on NVLink
    ring = 6.6 + (2 * (8 * nodes - 1) - 2 * (nodes - 1)) * (0.6 if nodes == 1 else 1.0) + 2 * (nodes - 1) * 2.7
    tree = 6.8 + 2 * (7 * 0.6 + int(math.log2(nodes)) * 5.0)
    return min(ring, tree)


def test_r1_two_nodes():
    vec, ars = D3 * 2, 2 * L3
    assert (vec, ars) == (14_336, 122)
    assert glued("r1_vec") == "14,336" and glued("r1_ars") == "122"
    assert glued("r1_cross_mb") == f"{ars * vec / 1e6:.2f}" == "1.75"
    assert (glued("r1_lat2_us"), glued("r1_lat1_us")) == (f"{nccl_us(2):.1f}", f"{nccl_us(1):.1f}") == ("25.2", "15.0")
    attn = L3 * (D3 * QL + QL * H3 * (NOPE + R) + D3 * (KL + R) + KL * H3 * (NOPE + VH) + H3 * VH * D3)
    assert attn == 11_413_422_080
    active = (attn + DENSE * 3 * D3 * FF_DENSE + (L3 - DENSE) * (ACTIVE_EXPERTS * 3 * D3 * FF_MOE + 256 * D3)
              + V3_VOCAB * D3)  # FP8 bytes a token reads: the output head, not the input table
    tp16 = active / 16 / BW + ars * nccl_us(2) * 1e-6
    hop = 2 * vec  # hidden state and residual cross between the stages
    assert glued("r1_hop") == f"{hop:,}" == "28,672" and glued("r1_hop_ratio") == str(ars * vec // hop) == "61"
    pp2 = 2 * (active / 2 / 8) / BW + ars * nccl_us(1) * 1e-6 + hop / NDR
    extra, saved = ars * (nccl_us(2) - nccl_us(1)) * 1e-6, active / 8 / BW - active / 16 / BW
    assert glued("r1_extra_ms") == f"{1e3 * extra:.2f}" == "1.24"
    assert glued("r1_saved_ms") == f"{1e3 * saved:.2f}"
    assert extra > saved  # the comparison the recommendation rests on
    assert glued("r1_ar8_ms") == f"{1e3 * ars * nccl_us(1) * 1e-6:.2f}"
    assert (glued("r1_node_gb"), glued("r1_ckpt_gb")) == ("640", "685")
    assert glued("r1_tp16_ms") == f"{1e3 * tp16:.2f}"
    assert glued("r1_pp2_ms") == f"{1e3 * pp2:.2f}"
    assert glued("r1_ar16_ms") == f"{1e3 * ars * nccl_us(2) * 1e-6:.2f}"
    latent = (KL + R) * 2  # bf16 bytes a token and layer
    free = (2 * 8 * 80e9 - (671e9 + 14e9)) / 16
    want = {"tp16": int(free // (L3 * latent)), "pp2": int(free // (31 * latent)),
            "dp2": 2 * int((free - attn / 16) // (L3 * latent)), "dp16": 16 * int((free - attn * 15 / 16) // (L3 * latent))}
    assert {k: glued(f"r1_tok_{k}") for k in want} == {k: f"{v:,}" for k, v in want.items()}
    assert want["tp16"] < want["pp2"] < want["dp16"]


def test_sections_cite_and_link():
    nb = chapter_outputs.notebook("deployment_plan")
    mem = chapter_outputs.section(nb, "deployment_plan-70b-one-gpu-memory", "deployment_plan-decode-floor")
    chapter_outputs.assert_cited(mem, ["kwon2023vllm", "vllmblocksizes", "pytorchcudamemory", "databricks2023inference"])
    r1 = chapter_outputs.section(nb, "deployment_plan-r1-two-nodes", "deployment_plan-forecast")
    chapter_outputs.assert_cited(r1, ["sglangdeepseek", "deepseekv3", "vllmppintermediate", "vllmcustomarp2p"])
    labels = chapter_outputs.book_labels()
    for text in (mem, r1):
        for ref in re.findall(r"\{ref\}`([\w.-]+)`", text):
            assert ref in labels, ref
    assert "serving_operations-gpu-memory-tools" in mem and "tensor_parallel-dp-attention" in r1
