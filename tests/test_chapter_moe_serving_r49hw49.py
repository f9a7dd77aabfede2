"""Section moe_serving-static-fabric: a large MoE on a compiler-scheduled SRAM fabric.

Recomputed from constants written out here: DeepSeek-V3 (arXiv:2412.19437 sec. 4.2: 671B parameters, 61 layers
of which the first 3 dense, 256 routed experts of width 2048 at d 7168, top 8), 220 MiB per TSP (Abts et al.,
ISCA 2022, abstract), Switch's capacity rule (sec. 2.2) with Lingvo's rounding (Top2GatingOnLogits)."""
import math

import chapter_outputs as co

NB = co.notebook("moe_serving")
SRAM = 220 * 2**20
TOTAL, E, K, D, F, MOE_LAYERS = 671_000_000_000, 256, 8, 7168, 2048, 61 - 3
EXPERT = 3 * D * F  # gate, up and down projections


def capacity(n, factor):
    c = int(n * K * factor / E) or 4
    return math.ceil(c / 4) * 4


def test_resident_chip_counts():
    g = co.cell_glue(NB, "SRAM_CHIP = ")
    assert g["moe49_chips_all"] == f"{math.ceil(TOTAL / SRAM):,}" == "2,909"
    assert g["moe49_chips_routed"] == f"{math.ceil(MOE_LAYERS * E * EXPERT / SRAM):,}"
    per_chip = SRAM // EXPERT
    assert g["moe49_per_chip"] == str(per_chip) == "5"
    assert g["moe49_layer_chips"] == str(math.ceil(E / per_chip))
    assert g["moe49_idle_b1"] == f"{1 - K / math.ceil(E / per_chip):.0%}"
    spare = math.ceil(MOE_LAYERS * 32 * EXPERT / SRAM)
    assert g["moe49_spare_chips"] == str(spare)
    out = co.printed(NB, "SRAM_CHIP = ")
    for n in (1, 8, 64):
        assert f"{E * (1 - (1 - K / E) ** n):5.1f} of {E} experts" in out


def test_capacity_table():
    lines = co.printed(NB, "def lingvo_capacity").splitlines()
    for n, line in zip((8, 64, 512), lines[1:4]):
        row = line.split()
        c = capacity(n, 1.25)
        assert row[:4] == [str(n), str(c), f"{E * c:,}", f"{1 - n * K / (E * c):.0%}"]
        assert row[5] == f"{E * c * D / 1e6:.1f}"
        assert row[6:] == [f"{E * n:,}", f"{E * n * D / 1e6:.1f}"]
        assert 0 <= float(row[4].rstrip("%")) < 100
    assert capacity(8, 1.25) == 4 and capacity(512, 1.25) == 20
    g = co.cell_glue(NB, "def lingvo_capacity")
    assert g["moe49_worst_x"] == str(E // K) == "32"
    # Lingvo's rounding at 64 tokens: int(64 x 8 x 1.25 / 256) = 2 becomes 4, an effective factor of 2
    assert g["moe49_cap64_raw"] == str(int(64 * K * 1.25 / E)) == "2"
    assert g["moe49_eff64"] == f"{E * capacity(64, 1.25) / (64 * K):.1f}" == "2.0"
    assert g["moe49_bcast64_mb"] == f"{64 * D / 1e6:.2f}" == "0.46"  # broadcast the step: n x d_model bytes


def test_section_cites_and_links():
    text = co.section(NB, "moe_serving-static-fabric", end="moe_serving-megablocks")
    co.assert_cited(text, ["fedus2022switch", "lingvogshardgating", "abts2022tsm", "abts2020tsp", "deepseekv3"])
    assert "as Switch and GShard did" not in text and "top-k form of Switch" in text
    co.assert_links(text, ["moe_serving-eplb", "moe_serving-experts-touched", "cuda_basics-sram-batching",
                           "cuda_basics-vliw-tpu", "moe_serving-capacity"])
    assert "In the interview" in text and ":class: dropdown" in text
