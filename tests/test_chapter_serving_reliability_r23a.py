"""Section serving_reliability-api-review-180k of "Overload, failures and rollouts".

The review of a 180K requests/s inference API: the usage-write rates, the quota hot key and its local token
buckets, the hot prefix, and the prefill fleet by cache hit rate, recomputed from the question's numbers, the
section's stated assumptions, Llama 3's shapes written out (config.json) and the H100 datasheet's bf16 peak,
not through mha_kit, and compared with the values the chapter glues and prints.
"""
import json
import math
import pathlib

import pytest
import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
LABEL = "(serving_reliability-api-review-180k)="

RPS, STREAM, TOKENS_DAY, TTFT = 180_000, 0.70, 45e12, 0.900  # the question
PEAK, OPEN_S, OUT, RECORD, PRIMARY = 2.0, 20.0, 400, 200, 20_000  # the section's assumptions
KAFKA = 421_823  # LinkedIn 2014: one producer, 3 brokers, 3x synchronous replication, 100-byte records
CONNS, FILL = 50_000, 0.7
TENANT, OPS, SHARD, SLACK, SYNC = 0.25, 2, 100_000, 1.5, 0.1
HOT, PREFIX, SUFFIX, MFU, TP = 0.05, 10_000, 1_000, 0.4, 8
H100 = 989e12  # bf16 dense FLOP/s (datasheet)
# (layers, d, heads, kv heads, head dim, MLP width, vocabulary): Llama 3 8B and 70B, config.json
SHAPES = {"8b": (32, 4096, 32, 8, 128, 14336, 128_256), "70b": (80, 8192, 64, 8, 128, 28672, 128_256)}


def flops(shape, cached, new):
    """Prefill of `new` tokens after `cached` ones: weights on the new tokens, the last token's logits,
    and attention of new token i over cached + i keys (scores and values, 4 h d_h FLOPs a key a layer)."""
    L, d, h, kv, hd, ff, v = SHAPES[shape]
    weights = L * (d * h * hd * 2 + 2 * d * kv * hd + 3 * d * ff)
    keys = new * cached + new * (new + 1) // 2
    return 2 * new * weights + 2 * v * d + L * 4 * h * hd * keys


PROMPT = round(TOKENS_DAY / 86_400 / (RPS / PEAK))
NODES = math.ceil(RPS * OPEN_S / (CONNS * FILL))


def gpus(shape, hit, n=PROMPT):
    c = round(hit * n)
    return RPS * flops(shape, c, n - c) / (H100 * MFU)


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("serving_reliability"), key)


def test_token_rates_and_connections():
    assert PROMPT == 5787
    assert glued("sr_api_mean_tok") == f"{TOKENS_DAY / 86_400 / 1e8:.1f}" == "5.2"
    assert glued("sr_api_prompt_mean") == "5,787"
    assert glued("sr_api_peak_tok") == f"{RPS * PROMPT / 1e9:.2f}" == "1.04"
    assert glued("sr_api_streams") == f"{STREAM * RPS * OPEN_S / 1e6:.2f}" == "2.52"
    assert glued("sr_api_open") == "3.6"
    assert NODES == 103 and glued("sr_api_gw_nodes") == "103"


def test_usage_writes():
    per_chunk = round(STREAM * RPS) * OUT + round((1 - STREAM) * RPS)  # 126,000 streams, 54,000 others
    assert per_chunk == 50_454_000
    assert glued("sr_api_rec_chunk") == "50.5"
    assert glued("sr_api_rec_req_mb") == f"{RPS * RECORD / 1e6:.0f}" == "36"
    assert glued("sr_api_rec_chunk_gb") == f"{per_chunk * RECORD / 1e9:.1f}" == "10.1"
    assert glued("sr_api_primary_req") == f"{RPS / PRIMARY:.0f}" == "9"
    assert glued("sr_api_primary_chunk") == f"{per_chunk / PRIMARY:,.0f}" == "2,523"
    assert glued("sr_api_kafka_req") == f"{RPS / KAFKA:.2f}" == "0.43"
    assert glued("sr_api_kafka_chunk") == f"{per_chunk / KAFKA:.0f}" == "120"
    assert RPS < KAFKA < per_chunk  # one benchmark cluster takes per-request records, not per-chunk ones


def test_quota_hot_key_and_local_buckets():
    tenant = TENANT * RPS
    local = SLACK * tenant / NODES
    over = NODES * local * SYNC
    assert over == pytest.approx(SLACK * tenant * SYNC)  # the bound does not grow with the fleet
    assert [glued(k) for k in ("sr_api_tenant_rps", "sr_api_key_ops", "sr_api_key_shard")] == \
        ["45,000", "90,000", "90%"]
    assert glued("sr_api_local") == f"{local:,.0f}" == "655"
    assert glued("sr_api_over") == f"{over:,.0f}" == "6,750"
    assert glued("sr_api_over_ms") == "150"
    assert glued("sr_api_syncs") == f"{NODES / SYNC:,.0f}" == "1,030"


def test_hot_prefix():
    req_s = flops("70b", PREFIX, SUFFIX) / (TP * H100 * MFU)
    busy = HOT * RPS * req_s
    L, d, h, kv, hd, ff, v = SHAPES["70b"]
    copy = 2 * L * kv * hd * 2 * PREFIX  # bf16 keys and values of the prefix
    assert glued("sr_api_hot_rps") == "9,000"
    assert glued("sr_api_hot_ms") == f"{1e3 * req_s:.0f}" == "52"
    assert glued("sr_api_hot_busy") == f"{busy:.0f}" == "468"
    assert glued("sr_api_hot_k") == str(math.ceil(busy / FILL)) == "669"
    assert glued("sr_api_hot_copy_gb") == f"{copy / 1e9:.2f}" == "3.28"
    assert glued("sr_api_hot_copy_frac") == f"{copy / (TP * 80e9):.1%}" == "0.5%"


def test_prefill_fleet_by_cache_hit_rate():
    for hit, g70, g8 in ((0.0, "380,456", "40,750"), (0.5, "195,189", "21,371"), (0.8, "79,260", "8,787")):
        assert f"{gpus('70b', hit):,.0f}" == g70 == glued(f"sr_api_gpus70_{hit * 100:.0f}")
        assert f"{gpus('8b', hit):,.0f}" == g8 == glued(f"sr_api_gpus8_{hit * 100:.0f}")
    assert gpus("70b", 0.8) < 0.25 * gpus("70b", 0.0)  # attention to the cached keys keeps it above 20%


def test_mix_drift_fallback_safety():
    mixed = 0.7 * gpus("8b", 0.8) + 0.3 * gpus("70b", 0.8)
    drift = 0.05 * (gpus("70b", 0.8) - gpus("8b", 0.8))
    assert glued("sr_api_mixed") == f"{mixed:,.0f}" == "29,929"
    assert glued("sr_api_drift") == f"{drift:,.0f}" == "3,524"
    assert glued("sr_api_drift_frac") == f"{drift / mixed:.0%}" == "12%"
    assert glued("sr_api_fallback_x") == f"{gpus('70b', 0.8) / mixed:.1f}" == "2.6"
    new = PROMPT - round(0.8 * PROMPT)
    assert glued("sr_api_safety") == f"{RPS * flops('8b', 0, new) / (H100 * MFU):,.0f}" == "7,509"
    assert glued("sr_api_mean_busy") == "50%"


def test_longest_prompt_within_ttft():
    budget = TTFT - 0.100

    def fits(n):
        return flops("70b", 0, n) / (TP * H100 * MFU) <= budget

    n = 16_032
    assert fits(n) and not fits(n + 1)
    assert glued("sr_api_nmax") == "16,032"


def test_printed_lines():
    nb = chapter_outputs.notebook("serving_reliability")
    usage = chapter_outputs.printed(nb, "PRIMARY_COMMITS = ")
    assert "usage records per request: 180,000/s, 36 MB/s; 9.0x one primary" in usage
    assert "usage records per streamed chunk: 50,454,000/s, 10,091 MB/s" in usage
    keys = chapter_outputs.printed(nb, "SLACK, SYNC_S = ")
    assert "over-admission <= 103 x 655 x 0.1 s = 6,750 requests (150 ms of the tenant's limit)" in keys
    sizing = chapter_outputs.printed(nb, "MIX = ")
    assert "router down, every request to 70B: 2.6x that fleet" in sizing
    for text in (usage, keys, sizing):
        assert max(len(line) for line in text.splitlines()) <= 120


def test_section_place_links_and_boxes():
    nb = json.loads((BOOK / "serving_reliability.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"]]
    start = next(i for i, s in enumerate(cells) if s.startswith(LABEL))
    assert cells[start - 1].startswith("(serving_reliability-design-review)=")
    end = next(i for i in range(start + 1, len(cells)) if cells[i].startswith("("))
    assert cells[end].startswith("(serving_reliability-device-map)=")
    section = "\n".join(cells[start:end])
    for ref in ("multi_tenant_serving-routing", "multi_tenant_serving-load-balancing",
                "multi_tenant_serving-cost-attribution", "deployment_plan-fleet", "serving_reliability-overload",
                "serving_reliability-multi-region", "serving_reliability-llm-evaluation",
                "serving_operations-guard-models", "serving_operations-client-fallback", "serving_operations-privacy"):
        assert f"{{ref}}`{ref}`" in section
    assert section.count(":class: dropdown\n") == 3 and "followup" not in section
    assert section.count("```{admonition} In the interview") == 1
    assert section.count("**Strong answer.**") == section.count("**Listening for.**") == section.count("**Trap.**") == 3
    for key in ("qa_dataford_claude_api", "kreps2014kafkabench", "kafkaproducerconfig", "zinkevich2016rulesml",
                "gdpr2016", "awscloudtraildigest"):
        assert f"`{key}" in section
    assert "assumption" in section and "mk.prefix_prefill_flops" in section
