"""Sections moe_serving-router-cost, moe_serving-mixtral-params and moe_serving-v31-vs-qwen3 (round 50, moe50).

Recomputed from constants written out here: Mixtral 8x7B (arXiv:2401.04088 Table 1: d 4096, 32 layers, 32 heads of
128, 8 KV heads, expert width 14336, vocabulary 32000, 8 experts, top 2), DeepSeek-V3 (inference/configs/config_671B.json:
d 7168, 61 layers of which 3 dense, 256 routed experts of width 2048, top 8, MLA latent 512 + rotary key 64, 128 heads),
Qwen3-235B-A22B (Ascend/MindSpeed-RL configs/model/qwen3_235b_a22b.yaml and THUDM/slime scripts/models/qwen3-235B-A22B.sh: 94 layers, d 4096, 64 query / 4 KV heads
of 128, 128 experts of width 1536, top 8, vocabulary 151936, untied embeddings), H100 SXM 3.35 TB/s, H200 141 GB."""
import math

import chapter_outputs as co

NB = co.notebook("moe_serving")


class _Glued:
    """``GLUE[key]``: the text glued under ``key`` in the chapter."""

    def __getitem__(self, key):
        return co.glued(NB, key)


GLUE = _Glued()

# Mixtral 8x7B
MD, ML, MH, MKV, MHD, MFF, MV, ME, MK = 4096, 32, 32, 8, 128, 14336, 32000, 8, 2
M_EXPERT = 3 * MD * MFF
M_ATTN = 2 * MD * MH * MHD + 2 * MD * MKV * MHD
M_TOTAL = ME * ML * M_EXPERT + ML * M_ATTN + 2 * MV * MD + ML * ME * MD + (2 * ML + 1) * MD
M_ACTIVE = M_TOTAL - (ME - MK) * ML * M_EXPERT
# Qwen3-235B-A22B
QD, QL, QH, QKV, QHD, QFF, QV, QE, QK = 4096, 94, 64, 4, 128, 1536, 151936, 128, 8
Q_EXPERT = 3 * QD * QFF
Q_TOTAL = QE * QL * Q_EXPERT + QL * (2 * QD * QH * QHD + 2 * QD * QKV * QHD) + 2 * QV * QD + QL * QE * QD
Q_ACTIVE = Q_TOTAL - (QE - QK) * QL * Q_EXPERT
# DeepSeek-V3
VD, VL, VDENSE, VE, VK, VFF = 7168, 61, 3, 256, 8, 2048


def touched(n, e, k):
    return e * (1 - (1 - k / e) ** n)


def test_mixtral_counts_match_the_paper():
    assert M_EXPERT == 176_160_768 and M_TOTAL == 46_702_792_704 and M_ACTIVE == 12_879_925_248
    assert round(M_TOTAL / 1e9) == 47 and round(M_ACTIVE / 1e9) == 13  # paper: 47B held, 13B active
    out = co.printed(NB, "MIX = dict(")
    assert f"{M_TOTAL:,}" in out and f"{M_ACTIVE:,}" in out and f"{M_ACTIVE / M_TOTAL:.1%}" in out
    assert GLUE["mix_total"] == "46.7" and GLUE["mix_active"] == "12.9" and GLUE["mix_active_pct"] == "28%"
    assert GLUE["mix_expert_m"] == "176" and GLUE["mix_experts_b"] == "45.1"
    assert GLUE["mix_attn_b"] == "1.34" and GLUE["mix_emb_b"] == "0.26"
    assert GLUE["mix_gflop"] == f"{2 * M_ACTIVE / 1e9:.1f}" == "25.8"
    assert GLUE["mix_bf16_gb"] == f"{2 * M_TOTAL / 1e9:.1f}" == "93.4"


def test_mixtral_bytes_per_step():
    always = M_TOTAL - ME * ML * M_EXPERT
    for b in (1, 4, 16, 64):
        read = 2 * (always + ML * touched(b, ME, MK) * M_EXPERT)
        assert GLUE[f"mix_read_{b}"] == f"{read / 1e9:.1f}"
        assert GLUE[f"mix_ms_{b}"] == f"{1e3 * read / 3.35e12:.1f}"
    assert GLUE["mix_read_1"] == GLUE["mix_gflop"]  # batch 1 reads exactly the active weights, 2 bytes each
    assert GLUE["mix_touch16"] == "7.9" and float(GLUE["mix_read_16"]) > 0.98 * 2 * M_TOTAL / 1e9


def test_router_cost():
    v3_router, v3_experts = 2 * VD * VE, VK * 2 * 3 * VD * VFF
    q_router, q_experts = 2 * QD * QE, QK * 2 * 3 * QD * QFF
    assert (v3_router, v3_experts, q_router, q_experts) == (3_670_016, 704_643_072, 1_048_576, 301_989_888)
    assert GLUE["rc_v3_mflop"] == "3.67" and GLUE["rc_qw_mflop"] == "1.05"
    assert GLUE["rc_v3_share"] == f"{v3_router / v3_experts:.2%}" == "0.52%"
    assert GLUE["rc_qw_share"] == f"{q_router / q_experts:.2%}" == "0.35%"
    out = co.printed(NB, "QWEN235 = mk.ModelFacts(")
    assert f"{(VL - VDENSE) * v3_router / 1e6:.0f}" in out and f"{QL * q_router / 1e6:.0f}" in out
    assert float(GLUE["rc_v3_model_share"].rstrip("%")) < 0.5


def test_qwen_counts_and_comparison():
    assert round(Q_TOTAL / 1e9) == 235 and round(Q_ACTIVE / 1e9) == 22  # model card: 235B, 22B activated
    assert round((Q_TOTAL - 2 * QV * QD) / 1e9) == 234  # 234B non-embedding
    assert GLUE["vq_q_total"] == f"{Q_TOTAL / 1e9:.1f}" and GLUE["vq_q_active"] == f"{Q_ACTIVE / 1e9:.1f}"
    q_cache, v3_cache = QL * 2 * QKV * QHD * 2, VL * (512 + 64) * 2  # bf16
    assert q_cache == 192_512 and GLUE["vq_q_cache"] == "188 KiB"
    assert GLUE["vq_cache_ratio"] == f"{q_cache / v3_cache:.1f}" == "2.7"
    assert GLUE["vq_h200_v3"] == "5" and GLUE["vq_h200_q"] == str(math.ceil(Q_TOTAL / 141e9)) == "2"
    assert GLUE["vq_cache4k_q"] == f"{q_cache * 4096 / 1e9:.2f}" and GLUE["vq_cache4k_v3"] == f"{v3_cache * 4096 / 1e9:.2f}"
    assert GLUE["vq_attn_q"] == f"{2 * QL * 2 * QH * 4096 * QHD / 1e9:.0f}" == "13"
    assert GLUE["vq_attn_v3"] == f"{2 * VL * 128 * 4096 * (2 * 512 + 64) / 1e9:.0f}" == "70"
    assert 0.34 < float(GLUE["vq_size_ratio"]) < 0.36 and 0.58 < float(GLUE["vq_read_ratio"]) < 0.60
    node = 8 * 141e9
    for key, held, cache in (("v3", 671.03e9 + 14e9, v3_cache), ("q", Q_TOTAL, q_cache)):
        left, conv = node - held, cache * 32768
        assert GLUE[f"vq_conv_gb_{key}"] == f"{conv / 1e9:.1f}"
        assert abs(int(GLUE[f"vq_slots_{key}"]) - left // conv) <= 1
    assert int(GLUE["vq_slots_v3"]) > int(GLUE["vq_slots_q"])  # the smaller model holds fewer 32K conversations


def test_sections_cite_link_and_box():
    rc = co.section(NB, "moe_serving-router-cost", end="moe_serving-device-limited-v2")
    co.assert_cited(rc, ["deepseekv3gate", "hfmoerouters", "vllmfusedmoelayer"])
    bh = co.section(NB, "moe_serving-mixtral-params", end="moe_serving-placement-training")
    co.assert_cited(bh, ["jiang2024mixtral", "mistral7b", "deepseekv31card", "mindspeedqwen3235b", "vllmascendqwen3235b", "slimeqwen3235b",
                         "hfqwen3moeblock"])
    labels = co.book_labels()
    for text, refs in ((rc, ("moe_serving-dispatch-latency", "moe_serving-load-balance", "moe_serving-imbalance-metrics",
                             "moe_serving-eplb", "moe_serving-v31-vs-qwen3")),
                       (bh, ("moe_serving-experts-touched", "moe_serving-batching", "moe_serving-dense-or-moe",
                             "moe_serving-attention-dense", "mla_serving-flops", "moe_serving-router-cost"))):
        for ref in refs:
            assert f"{{ref}}`{ref}`" in text and ref in labels, ref
        assert "In the interview" in text and ":class: dropdown" in text


def test_mixtral_decode_ridge_batch():
    ridge = 989e12 / 3.35e12  # H100 SXM dense bf16 FLOP/s over HBM bytes/s
    assert GLUE["mix_ridge"] == f"{ridge:.0f}" == "295"
    assert GLUE["mix_e_over_k"] == str(ME // MK) == "4"
    assert GLUE["mix_batch_ridge"] == f"{ridge * ME / MK:,.0f}"  # each expert sees k/E of the batch
