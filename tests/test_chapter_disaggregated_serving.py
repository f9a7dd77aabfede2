"""The chapter "Disaggregated prefill and decode", section "How a disk tier of the prefix cache works" (issue 38).

Llama 3 70B on a DGX H100: an 8,192-token prefix loaded from eight NVMe SSDs (PCIe 4.0 x4, 8 GB/s
each) against the 512 new tokens computed after it and against recomputing the whole prompt, at the
bf16 peak of eight H100s (989 TFLOP/s each). Recomputed here with the products written out, not read
from the notebook.
"""
import json

import pytest
from booktoc import REPO_ROOT

import mha_kit as mk

L, D, H, H_KV, D_H, D_FF, V = 80, 8192, 64, 8, 128, 28672, 128256  # Llama 3 70B
PREFIX, NEW = 8192, 512
NODE_FLOPS = 8 * 989e12
SSD_RATE = 8 * 8e9  # one PCIe 4.0 x4 drive per GPU, all in parallel

PER_TOKEN = L * 2 * (D * H * D_H + 2 * D * H_KV * D_H + H * D_H * D + 3 * D * D_FF)  # weights, all layers
LOGITS = 2 * V * D  # the last token's only


def _suffix_flops(cached, new):
    # new token i (1-based) attends to cached + i keys: 4 h d_h FLOPs a key per layer
    return new * PER_TOKEN + LOGITS + L * 4 * H * D_H * (new * cached + new * (new + 1) // 2)


def test_load_suffix_and_miss_by_hand():
    load = PREFIX * (L * 2 * H_KV * D_H * 2) / SSD_RATE  # 327,680 bytes a token in bf16
    assert load == pytest.approx(0.041943, abs=1e-6)
    suffix = _suffix_flops(PREFIX, NEW) / NODE_FLOPS
    whole = _suffix_flops(0, PREFIX + NEW) / NODE_FLOPS
    assert 1e3 * suffix == pytest.approx(10.29, abs=0.01)
    assert round(1e3 * whole) == 163
    # the chapter's table: time to first token after a queue wait
    assert round(1e3 * (0 + max(0, load) + suffix)) == 52  # no wait: the load shows in full
    assert round(1e3 * (0.020 + load + suffix)) == 72 and round(1e3 * (max(0.020, load) + suffix)) == 52
    assert round(1e3 * (0.050 + load + suffix)) == 102  # looked up only once scheduled
    assert round(1e3 * (max(0.050, load) + suffix)) == 60  # prefetched during the wait: hidden
    assert round(1e3 * (0.050 + whole)) == 213


def test_the_section_cites_each_tier_and_deepseeks_rules():
    nb = json.loads((REPO_ROOT / "book" / "disaggregated_serving.ipynb").read_text())
    text = " ".join(" ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "(disaggregated_serving-disk-tier)=" in text
    for key in ("`deepseekinfra2025`", "`deepseekkvcache{Cache Persistence and Hit Rules}`", "`deepseek3fs`",
                "`sglanghicache{Prefetch from L3", "`vllmoffloadguide`", "`lmcachekey`",
                "{ref}`multi_tenant_serving-deepseek-fleet`"):
        assert key in text


def test_batch_1_decode_a100_against_h100_is_the_bandwidth_ratio():
    """disaggregated_serving-why: Llama 3 8B, bf16, one sequence; datasheet bandwidths and dense bf16 peaks."""
    h100_bw, a100_80_bw, a100_40_bw = 3.35e12, 2.039e12, 1.555e12
    assert f"{h100_bw / a100_80_bw:.2f}" == "1.64" and f"{h100_bw / a100_40_bw:.2f}" == "2.15"
    assert f"{989 / 312:.2f}" == "3.17"
    llama8 = mk.MODEL_FACTS["llama-3-8b"]
    steps = {g: mk.roofline_step(llama8, mk.GPUS[g])(0, 1, 1_024) for g in ("a100-80gb", "h100-sxm")}
    assert steps["a100-80gb"] / steps["h100-sxm"] == pytest.approx(h100_bw / a100_80_bw, rel=1e-12)


def test_active_cache_over_pcie_is_fifty_times_slower_than_hbm():
    """Llama 3 8B at 32,768 tokens: 32 layers x 2 (K, V) x 8 heads x 128 x 2 bytes per token."""
    cache = 32 * 2 * 8 * 128 * 2 * 32_768
    assert cache == 4 * 2**30  # 4 GiB, read at every decode step
    hbm_ms, pcie_ms = 1e3 * cache / 3.35e12, 1e3 * cache / 64e9  # H100 SXM HBM3; PCIe Gen5 x16, one direction
    assert f"{hbm_ms:.1f}" == "1.3" and f"{pcie_ms:.0f}" == "67" and f"{pcie_ms / hbm_ms:.0f}" == "52"
