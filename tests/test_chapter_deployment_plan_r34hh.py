"""Section deployment_plan-open-conversations of "Plan a deployment": 100K concurrent conversations.

The interactive response-time law N = X (R + Z), Little's law applied to the whole loop of users, with
Z = 30 s of think time and R = 5 s a response; the bf16 KV cache of 100K idle 4,000-token histories of
Llama 3 70B (config.json: 80 layers, 8 KV heads of 128); the DGX H100 tiers that would hold them (8 x 80 GB
HBM less the bf16 weights, 2 TB DRAM, 8 x 3.84 TB NVMe; the datasheet); and reload against recompute for a
returning turn (PCIe 5 x16 at 64 GB/s each way, PCIe 4.0 x4 drives at 8 GB/s, 989 TFLOP/s bf16 dense).
Recomputed from the formulas and the constants written out, not through mha_kit.
"""
import math

import pytest

import chapter_outputs

OPEN, Z, R, HIST = 100_000, 30.0, 5.0, 4_000
L, D, KV, HD, H, D_FF, V = 80, 8192, 8, 128, 64, 28_672, 128_256
P70 = 70_553_706_496  # parameters, embedding and untied head included
GPUS, HBM, DRAM, NVME = 8, 80e9, 2e12, 8 * 3.84e12
PCIE5, PCIE4X4, PEAK = 64e9, 8e9, 989e12

RATE = OPEN / (R + Z)
SESSION = 2 * L * KV * HD * 2 * HIST  # K and V, bf16


def _prefill_flops(n):  # weights once per token per layer, causal attention, last token's logits
    attn_params = 2 * D * D + 2 * D * KV * HD  # W_q, W_o; W_k, W_v
    return L * n * 2 * (attn_params + 3 * D * D_FF) + L * 2 * H * HD * n * (n + 1) + 2 * V * D


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("deployment_plan")


def test_response_time_law(nb):
    assert round(RATE) == 2_857 and round(RATE * R) == 14_286 and round(RATE * Z) == 85_714
    assert RATE * (R + Z) == pytest.approx(OPEN)  # N = X (R + Z)
    assert chapter_outputs.glued(nb, "oc_rate") == f"{RATE:,.0f}"
    assert chapter_outputs.glued(nb, "oc_in_flight") == f"{RATE * R:,.0f}"
    assert chapter_outputs.glued(nb, "oc_thinking") == f"{RATE * Z:,.0f}"
    out = chapter_outputs.printed(nb, "OPEN, THINK_S")
    assert f"in flight X R = {RATE * R:,.0f}, thinking X Z = {RATE * Z:,.0f}" in out


def test_session_store(nb):
    assert SESSION == 327_680 * HIST == 1_310_720_000
    total = OPEN * SESSION
    assert chapter_outputs.glued(nb, "oc_session_gb") == "1.31"
    assert chapter_outputs.glued(nb, "oc_all_tb") == f"{total / 1e12:.0f}" == "131"
    assert chapter_outputs.glued(nb, "oc_flight_tb") == f"{RATE * R * SESSION / 1e12:.1f}"
    hbm_free = GPUS * HBM - 2 * P70
    nodes = [math.ceil(total / b) for b in (hbm_free, DRAM, NVME)]
    assert nodes == [263, 66, 5]
    assert [chapter_outputs.glued(nb, k) for k in ("oc_nodes_hbm", "oc_nodes_dram", "oc_nodes_nvme")] == [
        str(n) for n in nodes]


def test_reload_against_recompute(nb):
    dram_ms = 1e3 * SESSION / (GPUS * PCIE5)
    nvme_ms = 1e3 * SESSION / (GPUS * PCIE4X4)
    recompute_ms = 1e3 * _prefill_flops(HIST) / (GPUS * PEAK)
    assert dram_ms < nvme_ms < recompute_ms
    assert chapter_outputs.glued(nb, "oc_reload_dram_ms") == f"{dram_ms:.1f}" == "2.6"
    assert chapter_outputs.glued(nb, "oc_reload_nvme_ms") == f"{nvme_ms:.0f}" == "20"
    assert chapter_outputs.glued(nb, "oc_recompute_ms") == f"{recompute_ms:.0f}"
    assert chapter_outputs.glued(nb, "oc_reload_tbps") == f"{RATE * SESSION / 1e12:.1f}"


def test_section_links(nb):
    text = chapter_outputs.section(nb, "deployment_plan-open-conversations", end="deployment_plan-cost")
    for ref in ("little1961", "qin2025mooncake{Abstract}", "prefix_caching-growing-conversation",
                "prefix_caching-routing", "scheduler_design-littles-law", "serving_reliability-agentic",
                "disaggregated_serving-disk-tier"):
        assert ref in text


def test_think_time_halved(nb):
    peak = OPEN / (R + Z / 2)
    assert round(peak) == 5_000 and round(peak * R) == 25_000 and peak / RATE == pytest.approx(1.75)
    assert chapter_outputs.glued(nb, "oc_peak_rate") == f"{peak:,.0f}"
    assert chapter_outputs.glued(nb, "oc_peak_flight") == f"{peak * R:,.0f}"
    assert chapter_outputs.glued(nb, "oc_peak_x") == "1.75"


def test_peak_formula_consistent(nb):
    text = chapter_outputs.section(nb, "deployment_plan-open-conversations", end="deployment_plan-cost")
    assert "Z/2" not in text and "$N / (R + Z)$ =" in text
    assert chapter_outputs.glued(nb, "oc_peak_think") == f"{Z / 2:.0f}" == "15"
    assert chapter_outputs.glued(nb, "oc_peak_rate") == f"{OPEN / (R + Z / 2):,.0f}"


def test_fleet_recompute_and_hbm_floors(nb):
    recompute_s = _prefill_flops(HIST) / (GPUS * PEAK)
    nodes_busy = RATE * recompute_s  # node-seconds of peak compute per second
    assert 150 < nodes_busy < 263  # hundreds of nodes at peak, yet below the all-HBM store
    assert chapter_outputs.glued(nb, "oc_recompute_nodes") == f"{nodes_busy:.0f}"
    hbm_free = GPUS * HBM - 2 * P70
    assert chapter_outputs.glued(nb, "oc_flight_nodes") == str(math.ceil(RATE * R * SESSION / hbm_free)) == "38"
    assert chapter_outputs.glued(nb, "oc_fp8_nodes") == str(math.ceil(OPEN * SESSION / 2 / hbm_free))
