"""Section serving_reliability-api-review-180k of "Overload, failures and rollouts".

The review of a 180K requests/s inference API: the gateway and usage-log rates, the quota hot key and its
local token buckets, the hot prefix, and the prefill and decode fleets, recomputed from the question's
numbers, the section's stated assumptions, Llama 3.1's shapes written out (the Llama 3 layer shapes with a
131,072-token context) and the H100 datasheet's bf16 peak and bandwidth, not through mha_kit, and compared
with the values the chapter glues and prints.
"""
import math
import pathlib

import pytest
import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
LABEL = "(serving_reliability-api-review-180k)="

RPS, STREAM, TOKENS_DAY, TTFT, PLAIN_P99, SKUS = 180_000, 0.70, 45e12, 0.900, 4.5, 12  # the question, the source
PEAK, OPEN_S, PLAIN_S, OUT, RECORD, CKPT, PRIMARY = 2.0, 20.0, 3.0, 400, 200, 5.0, 20_000  # assumptions
KAFKA, KAFKA_RECORD = 421_823, 100  # LinkedIn 2014: one producer, 3 brokers, 3x synchronous replication, bytes
USERS = 25e6  # the source's daily users
CONNS, FILL = 50_000, 0.7
TENANT, OPS, SHARD, SLACK, SYNC = 0.25, 2, 100_000, 1.5, 0.1
PREFIX, SUFFIX, MFU, TP = 10_000, 1_000, 0.4, 8
MIX = {"8b": 0.7, "70b": 0.3}
DECODE = {"8b": (1, 64), "70b": (8, 192)}
HIT, HOPS, ROUTED, SHIFT, REGIONS, MIN_REPLICAS = 0.5, 0.100, 0.3, 0.05, 3, 2
H100, HBM_BW = 989e12, 3.35e12  # bf16 dense FLOP/s, HBM bytes/s (datasheet)
CONTEXT = 131_072  # Llama 3.1
# (layers, d, heads, kv heads, head dim, MLP width, vocabulary): Llama 3 / 3.1 8B and 70B, config.json
SHAPES = {"8b": (32, 4096, 32, 8, 128, 14336, 128_256), "70b": (80, 8192, 64, 8, 128, 28672, 128_256)}


def flops(shape, cached, new):
    """Prefill of `new` tokens after `cached` ones: weights on the new tokens, the last token's logits,
    and attention of new token i over cached + i keys (scores and values, 4 h d_h FLOPs a key a layer)."""
    L, d, h, kv, hd, ff, v = SHAPES[shape]
    weights = L * (d * h * hd * 2 + 2 * d * kv * hd + 3 * d * ff)
    keys = new * cached + new * (new + 1) // 2
    return 2 * new * weights + 2 * v * d + L * 4 * h * hd * keys


def params(shape):
    """Every weight: attention, SwiGLU MLP, two RMSNorms a layer, the final norm, untied embeddings and head."""
    L, d, h, kv, hd, ff, v = SHAPES[shape]
    return L * (2 * d * h * hd + 2 * d * kv * hd + 3 * d * ff + 2 * d) + d + 2 * v * d


def kv_token(shape):
    L, d, h, kv, hd, ff, v = SHAPES[shape]
    return 2 * L * kv * hd * 2  # bf16 keys and values, all layers


PROMPT = round(TOKENS_DAY / 86_400 / (RPS / PEAK))
CTX = PROMPT + OUT
STREAMED = 126_000
NODES = math.ceil((STREAMED * OPEN_S + (RPS - STREAMED) * PLAIN_S) / (CONNS * FILL))
TPOT_MAX = (PLAIN_P99 - TTFT) / OUT


def gpus(shape, hit, rate=RPS, n=PROMPT):
    c = round(hit * n)
    return rate * flops(shape, c, n - c) / (H100 * MFU)


def step(shape, tp, batch):
    return (2 * params(shape) / tp + batch * kv_token(shape) * CTX / tp) / HBM_BW  # 8 KV heads split over tp


def decode(shape, rate):
    tp, batch = DECODE[shape]
    plain = max(b for b in range(1, batch + 1) if step(shape, tp, b) <= TPOT_MAX)
    per_gpu = {b: b / step(shape, tp, b) / tp for b in (batch, plain)}
    return rate * OUT * (STREAM / per_gpu[batch] + (1 - STREAM) / per_gpu[plain]), plain


NB = chapter_outputs.notebook("serving_reliability")  # read once: glued() is called for every value


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_token_rates_and_connections():
    assert PROMPT == 5787
    assert glued("sr_api_mean_tok") == f"{TOKENS_DAY / 86_400 / 1e8:.1f}" == "5.2"
    assert glued("sr_api_prompt_mean") == "5,787"
    assert glued("sr_api_peak_tok") == f"{RPS * PROMPT / 1e9:.2f}" == "1.04"
    assert glued("sr_api_streams") == f"{STREAMED * OPEN_S / 1e6:.2f}" == "2.52"
    assert STREAMED * 20 + 54_000 * 3 == 2_682_000 and glued("sr_api_open") == "2.68"
    assert NODES == 77 and glued("sr_api_gw_nodes") == "77"
    assert glued("sr_api_events_node") == f"{STREAMED * OUT / NODES:,.0f}" == "654,545"


def test_usage_writes():
    per_chunk = STREAMED * OUT + (RPS - STREAMED)
    with_ckpt = RPS + STREAMED * (int(OPEN_S // CKPT) - 1)  # 3 checkpoints and a final record a stream
    assert per_chunk == 50_454_000 and with_ckpt == 558_000
    assert glued("sr_api_rec_chunk") == "50.5"
    assert glued("sr_api_rec_req_mb") == f"{RPS * RECORD / 1e6:.0f}" == "36"
    assert glued("sr_api_rec_ckpt") == "558,000"
    assert glued("sr_api_rec_ckpt_mb") == f"{with_ckpt * RECORD / 1e6:.0f}" == "112"
    kafka_bytes = KAFKA * KAFKA_RECORD  # compared in bytes: these records are twice the benchmark's
    assert glued("sr_api_kafka_ckpt") == f"{with_ckpt * RECORD / kafka_bytes:.2f}" == "2.65"
    assert glued("sr_api_rec_chunk_gb") == f"{per_chunk * RECORD / 1e9:.1f}" == "10.1"
    assert glued("sr_api_primary_req") == f"{RPS / PRIMARY:.0f}" == "9"
    assert glued("sr_api_primary_chunk") == f"{per_chunk / PRIMARY:,.0f}" == "2,523"
    assert glued("sr_api_kafka_req") == f"{RPS * RECORD / kafka_bytes:.2f}" == "0.85"
    assert glued("sr_api_kafka_chunk") == f"{per_chunk * RECORD / kafka_bytes:.0f}" == "239"
    assert RPS * RECORD < kafka_bytes < with_ckpt * RECORD  # checkpoints push past one synchronous producer
    assert glued("sr_api_primary_shards") == f"{math.ceil(RPS / (PRIMARY * FILL))}" == "13"


def test_daily_users():
    requests = RPS / PEAK * 86_400
    assert glued("sr_api_user_req") == f"{requests / USERS:,.0f}" == "311"
    assert glued("sr_api_user_tok") == f"{TOKENS_DAY / USERS / 1e6:.1f}" == "1.8"


def test_quota_hot_key_and_local_buckets():
    tenant = TENANT * RPS
    local = SLACK * tenant / NODES
    over = NODES * local * SYNC
    assert over == pytest.approx(SLACK * tenant * SYNC)  # the bound does not grow with the fleet
    assert [glued(k) for k in ("sr_api_tenant_rps", "sr_api_key_ops", "sr_api_key_shard")] == \
        ["45,000", "90,000", "90%"]
    assert glued("sr_api_local") == f"{local:,.0f}" == "877"
    assert glued("sr_api_over") == f"{over:,.0f}" == "6,750"
    assert glued("sr_api_over_ms") == "150"
    assert glued("sr_api_over_min") == f"{over / (60 * tenant):.2%}" == "0.25%"
    assert glued("sr_api_syncs") == f"{NODES / SYNC:,.0f}" == "770"


def test_hot_prefix_is_the_quarter_tenant():
    assert PREFIX + SUFFIX < CONTEXT
    req_s = flops("70b", PREFIX, SUFFIX) / (TP * H100 * MFU)
    busy = TENANT * RPS * req_s
    k = math.ceil(busy / FILL)
    copy = kv_token("70b") * PREFIX
    assert glued("sr_api_hot_ms") == f"{1e3 * req_s:.0f}" == "52"
    assert glued("sr_api_hot_busy") == f"{busy:,.0f}" == "2,338"
    assert k == 3341 and glued("sr_api_hot_k") == "3,341" and glued("sr_api_hot_gpus") == "26,728"
    assert glued("sr_api_hot_copy_gb") == f"{copy / 1e9:.2f}" == "3.28"
    assert glued("sr_api_hot_copy_frac") == f"{copy / (TP * 80e9):.1%}" == "0.5%"


def test_prefill_and_decode_fleet():
    for hit, g70 in ((0.0, "380,456"), (0.5, "195,189"), (0.8, "79,260")):
        assert f"{gpus('70b', hit):,.0f}" == g70 == glued(f"sr_api_gpus70_{hit * 100:.0f}")
    fleet = {m: (gpus(m, HIT, s * RPS), decode(m, s * RPS)[0]) for m, s in MIX.items()}
    assert glued("sr_api_8b_prefill") == f"{fleet['8b'][0]:,.0f}" == "14,959"
    assert glued("sr_api_70b_prefill") == f"{fleet['70b'][0]:,.0f}" == "58,557"
    assert glued("sr_api_8b_decode") == f"{fleet['8b'][1]:,.0f}" == "19,107"
    assert glued("sr_api_70b_decode") == f"{fleet['70b'][1]:,.0f}" == "21,959"
    assert fleet["8b"][1] > fleet["8b"][0]  # decode outweighs the small SKU's prefill
    total = sum(p + d for p, d in fleet.values())
    assert glued("sr_api_total") == f"{total:,.0f}" == "114,583"
    assert glued("sr_api_total_fill") == f"{total / FILL:,.0f}" == "163,689"
    assert glued("sr_api_decode_frac") == f"{(fleet['8b'][1] + fleet['70b'][1]) / total:.0%}" == "36%"
    mixed80 = sum(gpus(m, 0.8, s * RPS) for m, s in MIX.items())
    assert glued("sr_api_mixed80") == f"{mixed80:,.0f}" == "29,929"
    assert params("70b") == 70_553_706_496 and glued("sr_api_weights_gb") == "141"
    assert f"{1e3 * TPOT_MAX:.0f}" == glued("sr_api_tpot_max") == "9"
    assert decode("70b", 1)[1] == 49 and glued("sr_api_plain_batch") == "49"
    assert step("70b", 8, 49) <= TPOT_MAX < step("70b", 8, 50) and step("70b", 8, 192) > TPOT_MAX
    for m, (tp, batch) in DECODE.items():  # the streaming batch fits an 80 GB H100 beside the weights
        assert (2 * params(m) + batch * kv_token(m) * CTX) / tp < 80e9
    kv = sum(s * RPS * OUT * (STREAM * step(m, *DECODE[m]) + (1 - STREAM) * TPOT_MAX) * kv_token(m) * CTX
             for m, s in MIX.items())
    assert glued("sr_api_kv_pb") == f"{kv / 1e15:.1f}" == "1.4"
    per_req = {m: sum(fleet[m]) / (s * RPS) for m, s in MIX.items()}
    drift = SHIFT * ROUTED * RPS * (per_req["70b"] - per_req["8b"])
    to_large = ROUTED * 0.7 * RPS * (per_req["70b"] - per_req["8b"])
    assert glued("sr_api_drift") == f"{drift:,.0f}" == "3,296"
    assert glued("sr_api_to_large") == f"{to_large:,.0f}" == "46,141"


def test_safety_skus_hops_and_batch():
    cached = round(HIT * PROMPT)  # the classifier attends to the whole input, its prefix in its own cache
    safety_in = RPS * flops("8b", cached, PROMPT - cached) / (H100 * MFU)
    safety_out = RPS * flops("8b", 0, OUT) / (H100 * MFU)
    assert glued("sr_api_safety") == f"{safety_in:,.0f}" == "21,371"
    assert glued("sr_api_safety_out") == f"{safety_out:,.0f}" == "2,560"
    total = sum(gpus(m, HIT, s * RPS) + decode(m, s * RPS)[0] for m, s in MIX.items())
    assert glued("sr_api_total_safety_fill") == f"{(total + safety_in + safety_out) / FILL:,.0f}"
    assert SKUS * REGIONS * MIN_REPLICAS * TP == 576 and glued("sr_api_sku_floor") == "576"
    assert glued("sr_api_hops_avail") == f"{0.9995 ** 9:.2%}" == "99.55%"
    assert glued("sr_api_mean_busy") == "50%" and glued("sr_api_mean_busy_fill") == f"{FILL / PEAK:.0%}" == "35%"


def test_where_the_prompt_cache_lives():
    """Every computed token kept one lifetime (5 minutes, or an hour), against the fleet's HBM and each pool's
    host memory and disks (DGX H100: 8 GPUs, 2 TB, 8 x 3.84 TB NVMe); what hits load over PCIe Gen5 (64 GB/s)."""
    kv_mix = sum(s * kv_token(m) for m, s in MIX.items())
    assert kv_mix == 0.7 * 131_072 + 0.3 * 327_680
    peak = RPS * PROMPT
    fleet = {m: (gpus(m, HIT, s * RPS), decode(m, s * RPS)[0]) for m, s in MIX.items()}
    total = sum(p + d for p, d in fleet.values()) / FILL
    held = (1 - HIT) * peak * 300 * kv_mix
    assert glued("sr_api_cache_pb") == f"{held / 1e15:.0f}" == "30"
    assert glued("sr_api_fleet_hbm_pb") == f"{total * 80e9 / 1e15:.0f}" == "13" and held > total * 80e9
    expected = {"8b": ("14.3", "172", "12.2", "187", "3.2", "5%", "0.20", "85%"),
                "70b": ("15.4", "184", "28.8", "442", "0.9", "1%", "0.06", "187%")}
    for m, s in MIX.items():
        written = (1 - HIT) * s * peak * kv_token(m)
        nodes = sum(fleet[m]) / FILL / 8
        hit_gpu = HIT * s * peak * kv_token(m) / fleet[m][0]
        tp = DECODE[m][0]
        got = [glued(f"sr_api_{key}_{m}") for key in ("cache5", "cache60", "host", "disk", "hit_gpu", "hit_pcie",
                                                      "long_s", "host_share")]
        assert got == [f"{written * 300 / 1e15:.1f}", f"{written * 3600 / 1e15:.0f}", f"{nodes * 2e12 / 1e15:.1f}",
                       f"{nodes * 8 * 3.84e12 / 1e15:.0f}", f"{hit_gpu / 1e9:.1f}", f"{hit_gpu / 64e9:.0%}",
                       f"{100_000 * kv_token(m) / tp / 64e9:.2f}", f"{nodes * 2e12 / (written * 300):.0%}"]
        assert tuple(got) == expected[m], m
    assert glued("sr_api_prefill_frac") == "64%" and glued("sr_api_plain_batch8") == "17"


def test_no_batch_fits_a_long_non_streamed_answer():
    """The 4.5 s p99 holds the mean 400 tokens at batch 49, and no batch holds an answer longer than this."""
    for m, tp in (("70b", 8), ("8b", 1)):
        longest = math.floor((PLAIN_P99 - TTFT) / step(m, tp, 1))
        assert OUT < longest and TTFT + longest * step(m, tp, 1) <= PLAIN_P99 < TTFT + (longest + 1) * step(m, tp, 1)
        assert glued(f"sr_api_plain_max{m[:-1]}") == f"{longest:,}"
    assert glued("sr_api_plain_step70") == f"{1e3 * step('70b', 8, 1):.1f}" == "5.3"
    assert glued("sr_api_plain_max70") == "674" and glued("sr_api_plain_max8") == "714"


def test_longest_prompt_within_ttft():
    budget = TTFT - HOPS

    def fits(n):
        return flops("70b", 0, n) / (TP * H100 * MFU) <= budget

    n = 16_032
    assert fits(n) and not fits(n + 1) and n < CONTEXT
    assert glued("sr_api_nmax") == "16,032"


def test_printed_lines():
    nb = chapter_outputs.notebook("serving_reliability")
    usage = chapter_outputs.printed(nb, "PRIMARY_COMMITS = ")
    assert "-> 77 gateway nodes" in usage
    assert "usage records per request: 180,000/s, 36 MB/s; 9x one primary" in usage
    assert "usage records with checkpoints: 558,000/s, 112 MB/s; 28x one primary, 2.65x the benchmark's bytes" in usage
    assert "a daily user: 311 requests, 1.8e+06 prompt tokens" in usage
    assert "usage records per streamed chunk: 50,454,000/s, 10,091 MB/s" in usage
    keys = chapter_outputs.printed(nb, "SLACK, SYNC_S = ")
    assert "over-admission <= 77 x 877 x 0.1 s = 6,750 requests (150 ms, 0.25% of a minute)" in keys
    assert "spread over 3,341 replicas (26,728 H100s)" in keys
    sizing = chapter_outputs.printed(nb, "MIX = ")
    assert "fleet at 50% hits: 114,583 H100s, 163,689 at 70% fill" in sizing
    assert "49 non-streamed" in sizing and "(context 131,072)" in sizing
    for text in (usage, keys, sizing):
        assert max(len(line) for line in text.splitlines()) <= 120


def test_section_place_links_and_boxes():
    cells = ["".join(c["source"]) for c in NB["cells"]]
    start = next(i for i, s in enumerate(cells) if s.startswith(LABEL))
    assert cells[start - 1].startswith("(serving_reliability-design-review)=")
    section = chapter_outputs.section(NB, LABEL[1:-2], end="serving_reliability-device-map")
    assert section.count(")=\n#") == 1, "no other anchor between this section and the device-map section"
    for ref in ("multi_tenant_serving-routing", "multi_tenant_serving-load-balancing",
                "multi_tenant_serving-cost-attribution", "deployment_plan-fleet", "serving_reliability-overload",
                "serving_reliability-multi-region", "serving_reliability-llm-evaluation",
                "serving_operations-guard-models", "serving_operations-client-fallback", "serving_operations-privacy"):
        assert f"{{ref}}`{ref}`" in section
    for text in ("Llama 3.1 70B", "4.5 s", "long-tail", "(request id, sequence number)", "429 or 529", "Twelve SKUs",
                 "mk.decode_memory_floor"):
        assert text in section
    assert "Llama 3 70B" not in section
    assert section.count(":class: dropdown\n") == 3 and "followup" not in section
    assert section.count("```{admonition} In the interview") == 1
    assert section.count("**Strong answer.**") == section.count("**Listening for.**") == section.count("**Trap.**") == 3
    for key in ("qa_dataford_claude_api", "kreps2014kafkabench", "kafkaproducerconfig", "zinkevich2016rulesml",
                "gdpr2016", "awscloudtraildigest", "llama3", "anthropicratelimits"):
        assert f"`{key}" in section
    assert ",llama31ropescaling`" in section
    assert "assumption" in section and "mk.prefix_prefill_flops" in section
