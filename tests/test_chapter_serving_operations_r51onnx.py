"""Sections serving_operations-exported-kv-state, serving_operations-llm-gateway and
serving_operations-online-async-split (r51onnx).

The shared past/present buffer against separate buffers, recomputed from Llama 3 8B's shape written out
(32 layers, 8 KV heads of 128, fp16) and the H100 SXM bandwidth; the gateway's availabilities from the
stated assumptions; the cost of running follow-ups inline from the same roofline as the p95 budget (not
through the kit). Also: the corrected claim, the sources cited and the labels linked.
"""
import chapter_outputs

NB = chapter_outputs.notebook("serving_operations")

L, D, H, KV, HD, FF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
PARAMS = 8_030_261_248  # untied embedding and head, norms included
BW, PEAK = 3.35e12, 989e12  # H100 SXM: HBM bytes/s, dense bf16 FLOP/s
KV_TOKEN = 2 * L * KV * HD * 2  # bytes of fp16 (or bf16) cache a token
MAX_LEN = 4096


def glued(key):
    return chapter_outputs.glued(NB, key)


def prefill_flops(n):  # projections and SwiGLU per token, the last token's logits, causal attention
    per_token = L * (2 * D * H * HD + 2 * D * KV * HD + 3 * D * FF)
    return 2 * n * per_token + 2 * V * D + L * 2 * H * HD * n * (n + 1)


def test_shared_buffer_against_past_plus_present():
    assert KV_TOKEN == 131_072
    assert glued("so_sb_token_kib") == "128"
    assert glued("so_sb_shared_mib") == str(MAX_LEN * KV_TOKEN // 2**20) == "512"
    separate = (2 * MAX_LEN - 1) * KV_TOKEN  # past of L-1 tokens and present of L, both live in the step
    assert glued("so_sb_sep_max_mib") == f"{separate / 2**20:.0f}" == "1024"
    copy_s = 2 * (MAX_LEN - 1) * KV_TOKEN / BW
    assert glued("so_sb_copy_ms") == f"{1e3 * copy_s:.2f}" == "0.32"
    step_s = (2 * PARAMS + (MAX_LEN + 1) * KV_TOKEN) / BW  # batch 1 decode: weights and the cache, memory-bound
    assert glued("so_sb_step_ms") == f"{1e3 * step_s:.1f}" == "5.0"
    # separate buffers hold less than the shared one exactly while 2L - 1 < max_length
    cross = max(n for n in range(1, MAX_LEN + 1) if (2 * n - 1) < MAX_LEN)
    assert glued("so_sb_cross") == f"{cross:,}" == "2,048"
    # a 128K max_length reserves the whole context from the first token
    assert glued("so_sb_128k_gib") == f"{131_072 * KV_TOKEN / 2**30:.0f}" == "16"


def test_gateway_availability():
    provider, gateway, minutes = 0.999, 0.9995, 30 * 24 * 60
    direct, one, two = provider, gateway * provider, gateway * (1 - (1 - provider) ** 2)
    sdk = 1 - (1 - provider) ** 2  # the same fallback in the client, no gateway tier
    assert glued("so_gw_down_direct") == f"{(1 - direct) * minutes:.1f}" == "43.2"
    assert glued("so_gw_down_one") == f"{(1 - one) * minutes:.1f}" == "64.8"
    assert glued("so_gw_down_two") == f"{(1 - two) * minutes:.1f}" == "21.6"
    assert glued("so_gw_down_sdk") == f"{(1 - sdk) * minutes:.2f}" == "0.04"
    assert glued("so_gw_gateway_down") == f"{(1 - gateway) * minutes:.1f}" == "21.6"
    assert sdk > two > direct > one  # on availability alone the gateway never wins


def test_follow_ups_inline():
    tpot = (2 * PARAMS + (32 * 12_000 + 32) * KV_TOKEN) / BW
    prefill = (prefill_flops(12_000) - prefill_flops(2_000)) / PEAK / 0.5
    hold = 32 * tpot + prefill_flops(82) / PEAK / 0.5
    budget = 0.05 + 0.15 + 0.15 + 0.03 + 0.30 + prefill + 30 * tpot + hold + 0.10
    slack = 3.0 - budget
    assert glued("so_async_slack") == f"{1e3 * slack:.0f}"
    costs = {}
    for key, (n_in, n_out) in {"title": (300, 12), "summary": (2_000, 150), "llm": (1_500, 100)}.items():
        costs[key] = prefill_flops(n_in) / PEAK / 0.5 + n_out * tpot
        assert glued(f"so_async_{key}") == f"{1e3 * costs[key]:.0f}"
    assert costs["title"] < slack < min(costs["summary"], costs["llm"])
    text = chapter_outputs.section(NB, "serving_operations-online-async-split", end="serving_operations-batch-api")
    assert "more than three times that room" not in text  # the summary and judge come after the answer
    assert "after its last token" in text and "outbox" in text


def test_corrected_claim_and_sources():
    old = chapter_outputs.section(NB, "serving_operations-why-not-onnx", end="serving_operations-exported-kv-state")
    assert "copied or concatenated every step" not in old
    chapter_outputs.assert_links(old, ["serving_operations-exported-kv-state"])
    text = chapter_outputs.section(NB, "serving_operations-exported-kv-state", end="serving_operations-torch-compile")
    for name in ("SDPAToPagedAttention", "past_present_share_buffer", "ReadValue", "beam_idx", "#131",
                 "kv_shared_past_present", "builders/base.py"):
        assert name in text
    assert 'comment\n   says "cuda only"' not in text
    chapter_outputs.assert_cited(text, ["ovgenaihowitworks", "ovgenaicbpipeline", "ortgenaikvcache",
                                        "ortpastpresentdoc", "ortgenaipagedengine", "ovgenaillmpipeline"])
    chapter_outputs.assert_links(text, ["serving_kv_cache-per-layer-api", "serving_kv_cache-reserve",
                                        "kv_cache_basics-beam-search"])
    gw = chapter_outputs.section(NB, "serving_operations-llm-gateway", end="serving_operations-guard-models")
    assert "the gateway never wins" in gw and "sticky routing" in gw and "dated snapshot" in gw
    chapter_outputs.assert_cited(gw, ["litellmproxydocs", "litellmbenchmarks", "litellmpassthrough",
                                      "envoyaigw01", "envoyaigwreadme"])
    chapter_outputs.assert_links(gw, ["multi_tenant_serving-spend-budgets", "multi_tenant_serving-tenancy-design"])
    split = chapter_outputs.section(NB, "serving_operations-online-async-split", end="serving_operations-batch-api")
    chapter_outputs.assert_cited(split, ["awssqsatleastonce", "otelbatchspanjs"])
    chapter_outputs.assert_links(split, ["serving_operations-first-useful-p95", "serving_reliability-async-jobs",
                                         "serving_operations-chat-store"])
