"""Sections disaggregated_serving-kimi-80k, -mooncake-vs-nvshmem and -dgd: an 80,000-token Kimi K2 / DeepSeek-V3 MLA
cache over one 400 Gb/s port, eight ports, and Mooncake's measured 190 GB/s; Mooncake against NVSHMEM; and the
DynamoGraphDeployment with the 3P1D split as replicas. Recomputed from the cache shape (61 x 576 numbers), the
link rates and the Mooncake README's figures, not through mha_kit."""
import pytest

import chapter_outputs

PER_TOKEN, TOKENS, LAYERS = 61 * 576 * 2, 80_000, 61  # bf16 bytes a token
PORT, EIGHT_PORTS_LINE = 50e9, 8 * 50e9  # 400 Gb/s; eight of them
TE8, TE4 = 190e9, 87e9  # Mooncake README: 8 x 400 Gbps and 4 x 200 Gbps RoCE, measured


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("disaggregated_serving")


def test_transfer_times(nb):
    out = chapter_outputs.printed(nb, "K2_TOKENS, K2_ACTIVE")
    assert f"87 GB/s measured = {TE4 / 100e9:.1%} of line rate" in out
    assert f"190 GB/s measured = {TE8 / 400e9:.1%} of line rate" in out
    for label, size in (("bf16", TOKENS * PER_TOKEN), ("fp8", TOKENS * PER_TOKEN // 2)):
        for key, rate in (("port", PORT), ("line8", EIGHT_PORTS_LINE), ("te8", TE8)):
            assert chapter_outputs.glued(nb, f"ds_k2_{label}_{key}_ms") == f"{1e3 * size / rate:.1f}"
    assert chapter_outputs.glued(nb, "ds_k2_bf16_port_ms") == "112.4"
    assert chapter_outputs.glued(nb, "ds_k2_bf16_te8_ms") == "29.6"
    assert chapter_outputs.glued(nb, "ds_k2_layer_ms") == f"{1e3 * TOKENS * PER_TOKEN / PORT / LAYERS:.2f}" == "1.84"
    assert chapter_outputs.glued(nb, "ds_k2_eff8") == "47.5%"
    prefill = 2 * 32e9 * TOKENS / (8 * 989e12)  # linear layers at 32B activated, 8 H100s at the bf16 peak
    assert chapter_outputs.glued(nb, "ds_k2_prefill_ms") == f"{1e3 * prefill:,.0f}" == "647"
    assert chapter_outputs.glued(nb, "ds_k2_port_share") == f"{TOKENS * PER_TOKEN / PORT / prefill:.0%}"
    attn = LAYERS * 64 * (128 + 64 + 128) * TOKENS**2  # causal: QK over 192 dims, PV over 128, 64 heads
    assert chapter_outputs.glued(nb, "ds_k2_attn_pflops") == f"{attn / 1e15:.1f}" == "8.0"
    assert chapter_outputs.glued(nb, "ds_k2_lin_pflops") == "5.12"
    full_bf16, full_fp8 = prefill + attn / (8 * 989e12), prefill / 2 + attn / (8 * 989e12)
    assert chapter_outputs.glued(nb, "ds_k2_full_bf16_s") == f"{full_bf16:.2f}" == "1.66"
    assert chapter_outputs.glued(nb, "ds_k2_full_fp8_s") == f"{full_fp8:.2f}" == "1.33"
    port_s = TOKENS * PER_TOKEN / PORT
    assert chapter_outputs.glued(nb, "ds_k2_port_share_full") == f"{port_s / full_bf16:.0%}" == "7%"
    assert chapter_outputs.glued(nb, "ds_k2_port_share_full_fp8") == f"{port_s / full_fp8:.0%}" == "8%"
    assert chapter_outputs.glued(nb, "ds_k2_layer_prefill_ms") == f"{1e3 * prefill / LAYERS:.1f}" == "10.6"
    assert float(chapter_outputs.glued(nb, "ds_k2_layer_ms")) < 1e3 * prefill / LAYERS  # layer-wise send hides
    assert chapter_outputs.glued(nb, "ds_k2_tp") == "8"
    assert chapter_outputs.glued(nb, "ds_k2_decode_copies_gb") == f"{8 * TOKENS * PER_TOKEN / 1e9:.1f}" == "45.0"


def test_dgd_replicas_follow_the_split(nb):
    assert chapter_outputs.glued(nb, "ds_xpyd_8000_200") == "3P1D"
    assert chapter_outputs.glued(nb, "ds_dgd_p") == "3" and chapter_outputs.glued(nb, "ds_dgd_d") == "1"
    out = chapter_outputs.printed(nb, "n_p, n_d = ")
    assert "kind: DynamoGraphDeployment" in out and "subComponentType: prefill\n      replicas: 3" in out
    assert "backendFramework: vllm" in out
    assert "--tensor-parallel-size, \"8\", --disaggregation-mode, prefill]" in out
    assert "--tensor-parallel-size, \"8\", --disaggregation-mode, decode]" in out


def test_sections_cite(nb):
    k2 = chapter_outputs.section(nb, "disaggregated_serving-kimi-80k", end="disaggregated_serving-kv-connector")
    chapter_outputs.assert_cited(k2, ["mooncakete", "kimik2repo", "mooncaketopo", "nvidiadgxh100"])
    assert "{ref}`mla_serving-split-latent`" in k2 and "{ref}`mla_serving-kimi-k2-cache`" in k2
    cmp = chapter_outputs.section(nb, "disaggregated_serving-mooncake-vs-nvshmem",
                                  end="disaggregated_serving-decode-admission")
    chapter_outputs.assert_cited(cmp, ["mooncaketedesign", "nvshmemenv", "nvshmemdocs", "mooncakete", "deepeplegacy",
                                       "deepepv2", "sglangelasticep"])
    assert "| who may take part |" in cmp
    dgd = chapter_outputs.section(nb, "disaggregated_serving-dgd", end="disaggregated_serving-afd")
    chapter_outputs.assert_cited(dgd, ["dynamodgd"])
    assert "PodCliqueSet" in dgd and "docs/kubernetes/docs/kubernetes" not in dgd  # the Grove path skips DCDs
    assert "one NIC per request" in cmp and "aggregated over several NICs" not in cmp
    for text in (k2, cmp, dgd):
        assert "In the interview" in text
