"""Section moe_serving-megablocks-parallelism of "Mixture-of-experts serving": MegaBlocks' expert sharding.

Recomputed here without mha_kit, from the formulas and the primary sources' constants: Mixtral 8x7B's d 4096, expert
width 14336, 8 experts, top 2 and 32 layers (arXiv 2401.04088 Table 1); MegaBlocks' sharding rule of
megablocks/layers/mpu.py at commit 78eea65 (esd = min(W, E) dividing E, hsd = W // esd dividing the width, esd * hsd
== W); the all-to-all bytes of one token (k * hsd copies of d bf16 numbers out and back, (G - 1) / G of them remote)
and a ring all-reduce of d numbers (2 (t - 1) / t of them per GPU). They are compared with the chapter's stored outputs.
"""
import pathlib
from fractions import Fraction

import chapter_outputs

NB = chapter_outputs.notebook("moe_serving")
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
LABEL = "moe_serving-megablocks-parallelism"
MARKER = "def megablocks_degrees"
D, FF, E, K, LAYERS, TOKENS = 4096, 14336, 8, 2, 32, 4096
BF16 = 2  # bytes


def degrees(world):
    """MegaBlocks' (esd, hsd), or None where mpu.py raises."""
    esd = min(world, E)
    hsd = world // esd
    return (esd, hsd) if E % esd == 0 and FF % hsd == 0 and esd * hsd == world else None


def a2a_token_bytes(gpus, hsd):
    """Bytes one token's dispatch and combine move over all GPUs, exactly: 2 * k * hsd * (G - 1) / G * d * 2."""
    b = Fraction(2 * K * hsd * (gpus - 1) * D * BF16, gpus)
    assert b.denominator == 1
    return int(b)


def test_sharding_table():
    out = chapter_outputs.printed(NB, MARKER)
    assert degrees(4) == (4, 1) and degrees(8) == (8, 1) and degrees(16) == (8, 2) and degrees(64) == (8, 8)
    assert degrees(12) is None  # 8 * 1 != 12
    for world in (4, 8, 16, 64):
        esd, hsd = degrees(world)
        assert f"esd {esd}, hsd {hsd}: {E // esd} expert(s) a rank, {FF // hsd:,} columns each" in out, world
    # mpu.py's own message (lines 81-84 at 78eea65), not a paraphrase
    assert ("ValueError: Invalid sharding. 'expert_sharding_degree' (8) * hidden_sharding_degree (1)"
            " != world_size (12).") in out


def test_weights_and_bytes():
    g = chapter_outputs.cell_glue(NB, MARKER)
    per_layer = {gpus: E * 3 * D * FF // gpus * BF16 for gpus in (8, 16)}
    assert per_layer[8] == 336 * 2**20 and per_layer[16] == 168 * 2**20  # 336 MiB and 168 MiB a layer
    assert g["mbp_w_ep8"] == "10.5 GiB" == f"{per_layer[8] * LAYERS / 2**30:.1f} GiB"
    assert g["mbp_w_ep16"] == f"{per_layer[16] * LAYERS / 2**30:.2f} GiB" == "5.25 GiB"
    ep8, ep16 = a2a_token_bytes(8, 1), a2a_token_bytes(16, 2)
    tp8_gpu = 2 * (8 - 1) * (D // 8) * BF16  # ring all-reduce of one token's d outputs, per GPU
    assert (ep8, ep16, tp8_gpu) == (28_672, 61_440, 14_336)
    assert g["mbp_tok_ep8"] == f"{ep8:,}" and g["mbp_gpu_ep8"] == f"{ep8 // 8:,}" == "3,584"
    assert g["mbp_tok_ep16"] == f"{ep16:,}" and g["mbp_gpu_ep16"] == f"{ep16 // 16:,}" == "3,840"
    assert g["mbp_gpu_tp8"] == f"{tp8_gpu:,}" and g["mbp_tok_tp8"] == f"{tp8_gpu * 8:,}" == "114,688"
    assert g["mbp_tok_ratio"] == f"{ep16 / ep8:.2f}" == "2.14"
    assert g["mbp_gpu_ratio"] == f"{(ep16 // 16) / (ep8 // 8):.2f}" == "1.07"
    assert g["mbp_tp_ratio"] == str(tp8_gpu // (ep8 // 8)) == "4"  # G / k
    out = chapter_outputs.printed(NB, MARKER)
    rows = TOKENS * K // E
    for gemm in (f"1 x ({rows:,} x {FF:,})", f"1 x ({rows:,} x {FF // 2:,})", f"8 x ({rows:,} x {FF // 8:,})"):
        assert gemm in out, gemm


def test_section_cites_and_links():
    text = chapter_outputs.section(NB, LABEL, end="moe_serving-attention-moe")
    assert text.startswith(f"({LABEL})=\n### ")
    for cite in ("megablocksissue40{tgale96, 21 November 2023}", "megablocksissue21{tgale96, 5 September 2023}",
                 "megablockspr15{title}", "megablocksepcode{arguments.py, lines 42-43}",
                 "megablocksepcode{mpu.py, lines 65-93}", "megablocksepcode{moe.py, parallel_forward_once",
                 "megablocksepcode{weight_parallel.py at 27d3d2c^", "megatronmegablocksfork{megatron/model/transformer.py",
                 "megablocksrepo{README.md}", "jiang2024mixtral{§2, Table 1}"):
        assert cite in text, cite
        assert f"{{{cite.split('{')[0]}," in BIB, cite
    for ref in ("tensor_parallel-dp-attention", "tensor_parallel-ep-layouts", "moe_serving-ep-with-tp-attention",
                "moe_serving-megablocks", "moe_serving-expert-parallelism"):
        assert f"{{ref}}`{ref}`" in text, ref
    assert "{admonition} In the interview" in text and text.count(":class: dropdown") == 1
    # the two facts the grading round found missing, and the stated assumptions
    for phrase in ("sharded data parallelism", "hidden_sharding_degree", "uniform routing", "bf16",
                   "no de-duplication", "12 ranks"):
        assert phrase in text, phrase
    assert "not tensor parallelism" in text and "There is no all-reduce" in text


def test_cross_node_share_and_128_limit():
    """EP 16 on two 8-GPU nodes: mlp.py puts expert e's slice s on rank s * esd + e, so one half of every expert is
    in each node and exactly half of a token's copies (and partials) change node; the dMoE's width limit of 128."""
    g = chapter_outputs.cell_glue(NB, MARKER)
    esd, hsd = degrees(16)
    placement = {e: [s * esd + e for s in range(hsd)] for e in range(E)}
    assert all(sorted(r // 8 for r in ranks) == [0, 1] for ranks in placement.values())
    remote = Fraction(sum((src // 8) != (r // 8) for src in range(16) for e in range(E) for r in placement[e]),
                      16 * E * hsd)  # share of copies that change node
    copies = K * hsd * remote
    assert copies == 2 and g["mbp_xnode_copies"] == str(copies)
    xnode_gpu = int(copies * 2 * D * BF16) // 16  # out and back, per GPU per token of the step
    assert xnode_gpu == 2_048 and g["mbp_xnode_gpu"] == f"{xnode_gpu:,}"
    assert g["mbp_xnode_share"] == f"{xnode_gpu / (a2a_token_bytes(16, 2) // 16):.0%}" == "53%"
    widths = {h: FF // h for h in (1, 2, 4, 8, 16, 32, 64)}
    assert g["mbp_128_max_hsd"] == str(max(h for h, w in widths.items() if w % 128 == 0)) == "16"
    assert g["mbp_128_fail"] == f"{widths[32]:,}" == "448" and widths[32] % 128
    text = chapter_outputs.section(NB, LABEL, end="moe_serving-attention-moe")
    for cite in ("megablocksissue40{tgale96, 22 November 2023", "megablocksissue85{tgale96, 5 January 2024}",
                 "megablocksissue100{mvpatel2000, 1 April 2024}", "megablocksexpscripts{exp/dmoe/dmoe_*_8gpu.sh",
                 "megablocksexpscripts{mlp.py lines 71-81}", "megatronmegablocksfork{megatron/model/transformer.py"):
        assert cite in text, cite
        assert f"{{{cite.split('{')[0]}," in BIB, cite
    assert "most of those copies" not in text and "expert model parallel sharding" in text
    assert "({ref}`moe_serving-megablocks`)" not in text  # the 8-GPU claim now cites the scripts
