"""Sections moe_serving-sp-with-tp and moe_serving-tp-vs-ep-batch1 of "Mixture-of-experts serving".

Sequence parallelism in Megatron's MoE layers: the tokens a GPU routes, the all-to-all bytes and the expert rows with
and without SP for Mixtral 8x7B's shape (d 4096, 8 experts, top 2) at attention TP 2, EP 8, 4,096 tokens a
micro-batch. TP against EP at batch 1: the busiest GPU's expected number of a token's experts, recomputed by brute
enumeration of every top-k set for Mixtral and by a recursion over GPUs for DeepSeek-V3, not by the chapter's
polynomial."""
import itertools
import pathlib
from fractions import Fraction
from functools import lru_cache
from math import comb

import chapter_outputs

NB = chapter_outputs.notebook("moe_serving")
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
MIB = 2**20


def a2a_bytes(local_tokens, d, k, ep):  # dispatch + combine of one GPU's tokens, bf16, uniform routing
    return 2 * local_tokens * k * (ep - 1) / ep * d * 2


def test_sp_dispatch_table():
    d, k, seq, tp, ep = 4096, 2, 4096, 2, 8
    off, on = a2a_bytes(seq, d, k, ep), a2a_bytes(seq // tp, d, k, ep)
    assert off == 112 * MIB and on == 56 * MIB and off == tp * on
    rows_off, rows_on = seq * ep * k // 8, seq // tp * ep * k // 8  # one expert per GPU
    assert (rows_off, rows_on) == (8192, 4096)
    ar = 2 * (tp - 1) * seq * d // tp * 2
    assert ar == 32 * MIB
    g = chapter_outputs.cell_glue(NB, "SP_SEQ, SP_TP, SP_EP")
    assert g == {"spmoe_a2a_off": "112 MiB", "spmoe_a2a_on": "56 MiB", "spmoe_rows_off": "8,192",
                 "spmoe_rows_on": "4,096", "spmoe_ar": "32 MiB"}
    printed = chapter_outputs.printed(NB, "SP_SEQ, SP_TP, SP_EP")
    assert "all-reduce 32 MiB, reduce-scatter + all-gather 32 MiB" in printed
    assert "each is dispatched 2 times" in printed


def busiest_by_enumeration(num_experts, top_k, gpus):
    per, total = num_experts // gpus, 0
    for chosen in itertools.combinations(range(num_experts), top_k):
        counts = [0] * gpus
        for e in chosen:
            counts[e // per] += 1
        total += max(counts)
    return Fraction(total, comb(num_experts, top_k))


def busiest_by_recursion(num_experts, top_k, gpus):
    per = num_experts // gpus

    @lru_cache(maxsize=None)
    def ways(g, left, cap):  # ways to place `left` picks on g GPUs, at most cap on each
        if g == 0:
            return 1 if left == 0 else 0
        return sum(comb(per, c) * ways(g - 1, left - c, cap) for c in range(min(cap, left, per) + 1))

    le = [ways(gpus, top_k, m) for m in range(top_k + 1)]
    return Fraction(sum(m * (le[m] - le[m - 1]) for m in range(1, top_k + 1)), comb(num_experts, top_k))


def test_mixtral_busiest_gpu_exact():
    assert busiest_by_enumeration(8, 2, 2) == 1 + Fraction(12, 28)
    got = [busiest_by_enumeration(8, 2, g) for g in (2, 4, 8)]
    assert got == [Fraction(10, 7), Fraction(8, 7), Fraction(1)]
    assert [busiest_by_recursion(8, 2, g) for g in (2, 4, 8)] == got
    assert chapter_outputs.glued(NB, "b1_mix2") == "1.43"
    assert chapter_outputs.glued(NB, "b1_mix4") == f"{float(got[1] / Fraction(2, 4)):.2f}" == "2.29"
    assert chapter_outputs.glued(NB, "b1_mix8") == "4"
    assert "Mixtral EP 2: P(both on one GPU) = 3/7 (= 12/28)" in chapter_outputs.printed(NB, "def busiest_gpu_experts")


def test_deepseek_v3_busiest_gpu():
    v3 = busiest_by_recursion(256, 8, 8)
    nodes = busiest_by_recursion(128, 8, 4)  # 8 experts from 4 groups of 32, one group a GPU
    assert 2 < v3 < nodes < 4
    p_two = 1 - Fraction(comb(8, 8) * 32**8, comb(256, 8))
    assert chapter_outputs.glued(NB, "b1_v3") == f"{float(v3):.2f}" == "2.56"
    assert chapter_outputs.glued(NB, "b1_v3_nodes") == f"{float(nodes):.2f}"
    assert chapter_outputs.glued(NB, "b1_v3_p") == f"{float(p_two):.1%}"
    printed = chapter_outputs.printed(NB, "def busiest_gpu_experts")
    assert f"{float(v3):.3f}" in printed and f"{float(nodes):.3f}" in printed


def test_sections_cite_and_box():
    sp = chapter_outputs.section(NB, "moe_serving-sp-with-tp", end="moe_serving-tp-vs-ep-batch1")
    b1 = chapter_outputs.section(NB, "moe_serving-tp-vs-ep-batch1", end="moe_serving-dispatch-latency")
    for section, keys in ((sp, ("megatronmoesp", "dsmegatronmoetp", "vllmspmoe", "jiang2024mixtral")),
                          (b1, ("sglangeppr2203", "dbrxtpep", "deepseekv3"))):
        assert section.splitlines()[1].startswith("### ")
        assert "```{admonition} In the interview" in section and ":class: dropdown" in section
        for key in keys:
            assert f"{key}{{" in section, key
            assert f"{{{key}," in BIB, key
    assert "core_v0.12.0" in sp and "1587" in sp and "training speed" in sp
    assert "12/28" in b1 and "2203" in b1
    # Round-34 review: no unsourced "result unchanged" claim; the t-copy gradient caveat; the cited group layout.
    assert "changes nothing in the result" not in sp and "Accuracy is not the concern" not in sp
    assert "$t$ times too large" in sp and "During training, performance may degrade" in sp
    assert "deepseekv3gate{" in b1 and "{deepseekv3gate," in BIB and "at most 4 groups" in b1
    assert "untuned Triton EP kernel" not in b1
