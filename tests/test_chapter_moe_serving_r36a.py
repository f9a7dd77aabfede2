"""Section moe_serving-choosing-top-k of "Mixture-of-experts serving": what top-k costs a server.

Recomputed here without mha_kit, from the formulas and the primary sources' constants: Mixtral 8x7B's hidden size 4096
and expert width 14336 (MixtralConfig defaults), DeepSeek-V3's 7168, 2048, 256 experts and top 8 (config_671B.json,
arXiv 2412.19437 sec. 4.2); per-token routed-expert FLOPs 2 * k * 3 * d * d_ff (SwiGLU), dispatch + combine bf16 bytes
at EP 8 with one token a GPU (k copies, 7 of 8 remote, each way), the expected distinct experts E (1 - (1 - k/E)^n) as
an exact fraction, the smallest batch reaching 99% of E by search, and DeepSeekMoE's sec. 3.1 combination counts.
They are compared with the chapter's stored outputs.
"""
import pathlib
from fractions import Fraction
from math import comb

import chapter_outputs

NB = chapter_outputs.notebook("moe_serving")
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
LABEL = "moe_serving-choosing-top-k"
MARKER = "MIX_D, MIX_FF"
# (E, k, d_model, expert intermediate size): top-1 and top-2 over Mixtral's experts, DeepSeek-V3
DESIGNS = ((8, 1, 4096, 14336), (8, 2, 4096, 14336), (256, 8, 7168, 2048))
NS, EP = (1, 8, 64, 256), 8


def touched(n, e, k):
    """Expected distinct experts, exactly: E (1 - (1 - k/E)^n)."""
    return e * (1 - (1 - Fraction(k, e)) ** n)


def first_full(e, k):
    """Smallest n whose expected distinct experts reach 99% of E, by search."""
    n = 1
    while touched(n, e, k) < Fraction(99, 100) * e:
        n += 1
    return n


def test_flops_bytes_and_touched():
    g = chapter_outputs.cell_glue(NB, MARKER)
    for e, k, d, ff in DESIGNS:
        flops = 2 * k * 3 * d * ff
        # one token a GPU: k copies, (EP - 1) / EP of them remote, dispatch and combine, 2 bytes an element
        a2a, rem = divmod(2 * k * (EP - 1) * d * 2, EP)
        assert rem == 0
        assert g[f"ktk_mflop_{e}_{k}"] == f"{flops // 10**6:,}"
        assert g[f"ktk_a2a_{e}_{k}"] == f"{a2a:,}"
        assert g[f"ktk_full_{e}_{k}"] == str(first_full(e, k))
        for n in NS:
            assert g[f"ktk_touch_{e}_{k}_{n}"] == f"{float(touched(n, e, k)):.1f}"
    assert (g["ktk_a2a_8_1"], g["ktk_a2a_8_2"], g["ktk_a2a_256_8"]) == ("14,336", "28,672", "200,704")
    assert (g["ktk_full_8_1"], g["ktk_full_8_2"], g["ktk_full_256_8"]) == ("35", "17", "146")


def test_same_flops_more_copies():
    # DeepSeek-V3's 8 experts of 2048 cost a token exactly what Mixtral's 2 of 14336 do
    assert 8 * 7168 * 2048 == 2 * 4096 * 14336
    assert chapter_outputs.glued(NB, "ktk_mflop_256_8") == chapter_outputs.glued(NB, "ktk_mflop_8_2") == "704"
    assert (8 * 7168) / (2 * 4096) == 7
    assert chapter_outputs.glued(NB, "ktk_a2a_ratio") == "7"
    # a larger k reaches "every expert" at a smaller batch (8 experts)
    assert first_full(8, 2) < first_full(8, 1)


def test_combinations_printed():
    assert comb(16, 2) == 120 and comb(64, 8) == 4_426_165_368  # DeepSeekMoE sec. 3.1
    assert chapter_outputs.glued(NB, "ktk_c64_8") == "4,426,165,368"
    out = chapter_outputs.printed(NB, MARKER)
    assert f"C(256, 8) = {comb(256, 8):,}" in out and "C(8, 2) = 28" in out


def test_section_cites_and_links():
    text = chapter_outputs.section(NB, LABEL)
    for cite in ("fedus2022switch{§2.1}", "fedus2022switch{§2.3, Table 1}", "shazeer2017outrageously{§2.1}",
                 "jiang2024mixtral{§2.1}", "dai2024deepseekmoe{§3.1}", "dai2024deepseekmoe{§3.2}", "deepseekv3{§4.2}"):
        assert cite in text, cite
        assert f"{{{cite.split('{')[0]}," in BIB
    for ref in ("moe_serving-router", "moe_serving-experts-touched", "moe_serving-shared-experts",
                "moe_serving-expert-parallelism", "moe_serving-prefill-decode-ep"):
        assert f"{{ref}}`{ref}`" in text, ref
    assert "{admonition} In the interview" in text and text.count(":class: dropdown") == 2
    assert "uniform" in text  # the routing assumption is stated


def test_v3_shared_expert_fp8_and_network():
    g = chapter_outputs.cell_glue(NB, MARKER)
    d, ff, k, e = 7168, 2048, 8, 256
    routed, shared = 2 * k * 3 * d * ff, 2 * 1 * 3 * d * ff  # 1 shared expert of the routed width (sec. 4.2)
    assert g["ktk_mflop_v3_shared"] == "88" == f"{shared / 1e6:.0f}"
    assert g["ktk_mflop_v3_total"] == "793" == f"{(routed + shared) / 1e6:.0f}"
    assert g["ktk_v3_shared_pct"] == "12.5%" == f"{shared / routed:.1%}"
    # copies leaving the GPU at EP 8: k (EP - 1) / EP
    assert g["ktk_leave_256_8"] == str(k * (EP - 1) // EP) == "7"
    # FP8 dispatch (1 byte) + bf16 combine (2 bytes), remote copies only
    fp8 = k * (EP - 1) * d * (1 + 2) // EP
    assert g["ktk_a2a_v3_fp8"] == f"{fp8:,}" == "150,528"
    mix = 2 * (EP - 1) * 4096 * 2 * 2 // EP
    assert g["ktk_a2a_fp8_ratio"] == f"{fp8 / mix:.2f}" == "5.25"
    assert g["ktk_e_over_k"] == "32"
    assert g["ktk_gap64_pct"] == f"{float(1 - touched(64, e, k) / e):.0%}" == "13%"
    text = chapter_outputs.section(NB, LABEL)
    for cite in ("deepseekv3{§3.2.2}", "deepseekv3{§3.3.3}", "deepseekv3{§3.4.2}",
                 "meta2025llama4{Llama 4 Maverick, MoE layers}", "lu2024notallexperts{Abstract}"):
        assert cite in text, cite
        assert f"{{{cite.split('{')[0]}," in BIB
    assert "routed-expert FLOPs match" in text and "three representative points" in text
    assert "the one place" not in text
