"""Section deployment_plan-cost-plan of "Plan a deployment": an inference bill cut in order, priced.

The API steps are recomputed from the dated prices (Anthropic's pricing, Haiku 5.5 overview,
prompt-caching and batch pages) and the stated workload; the self-hosting rows from Llama 3 70B's
shape and the H100 datasheet through the independent floor model of test_chapter_deployment_plan_r20d
(not through mk.plan_deployment).
"""
import math

import chapter_outputs
import test_chapter_deployment_plan_r20d as floors

LARGE, SMALL = (5.00, 25.00), (0.10, 0.50)  # dollars per million input, output tokens (read 7 December 2026)
READ, WRITE, BATCH = 0.10, 1.25, 0.50
REQ, PROMPT, PREFIX, OUT, CAPPED = 10_000_000, 3000, 2000, 400, 300
HIT, SMALL_SHARE, ESCALATE, WAIT = 0.95, 0.60, 0.10, 0.20
PRICE, DIVISOR = 2.0, 0.5 * 0.5  # dollars per GPU-hour; MBU x utilisation
NB = chapter_outputs.notebook("deployment_plan")


def glued(key):
    return chapter_outputs.glued(NB, key)


def cost(prices, out, cached):
    prefix = PREFIX * (HIT * READ + (1 - HIT) * WRITE) if cached else PREFIX
    return ((prefix + PROMPT - PREFIX) * prices[0] + out * prices[1]) / 1e6


BASE = cost(LARGE, OUT, False)
L, S = cost(LARGE, CAPPED, True), cost(SMALL, CAPPED, True)
ROUTED = (1 - SMALL_SHARE) * L + SMALL_SHARE * (S + ESCALATE * L)
DAYS = [REQ * c for c in (BASE, cost(LARGE, CAPPED, False), L, ROUTED, ROUTED * (1 - WAIT * (1 - BATCH)))]


def test_prefix_drill_tokens():
    worth = PREFIX * (HIT * READ + (1 - HIT) * WRITE)
    assert math.isclose(worth, round(worth))  # a whole number of tokens' worth
    prose = "".join("".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown")
    assert f"= {round(worth)}$ tokens' worth instead of\n{PREFIX:,}" in prose
    assert f"bills like {round(worth) + PROMPT - PREFIX:,} tokens instead of {PROMPT:,}" in prose


def test_api_steps_in_dollars_a_day():
    assert [round(d) for d in DAYS] == [250_000, 225_000, 140_750, 66_434, 59_791]
    assert [glued(f"dp_cp_day{i}") for i in range(5)] == [f"{d:,.0f}" for d in DAYS]
    assert glued("dp_cp_input_share") == f"{PROMPT * LARGE[0] / 1e6 / BASE:.0%}" == "60%"
    assert glued("dp_cp_cache_saved") == f"{1 - DAYS[2] / DAYS[1]:.1%}" == "37.4%"
    assert glued("dp_cp_route_saved") == f"{1 - DAYS[3] / DAYS[2]:.1%}" == "52.8%"
    assert glued("dp_cp_cum4") == f"{1 - DAYS[4] / DAYS[0]:.1%}" == "76.1%"


def test_misroutes():
    assert glued("dp_cp_misroute") == f"{REQ * SMALL_SHARE * ESCALATE * (L + S):,.0f}"
    # routing loses money only when s (S + e L) > s L: e > (L - S) / L
    assert glued("dp_cp_escalate_be") == f"{(L - S) / L:.0%}" == "98%"


def self_host(tp, wb, batch):
    """GPU-seconds and planning dollars for one request: decode of 300 tokens and prefill of the uncached part."""
    step = floors.decode("h100", tp, wb, batch, PROMPT + CAPPED)
    uncached = PROMPT - PREFIX + (1 - HIT) * PREFIX
    gpu_s = CAPPED * tp * step / batch + tp * floors.prefill("h100", tp, wb, PROMPT) * uncached / PROMPT
    return step, gpu_s, gpu_s * PRICE / 3600 / DIVISOR


def test_self_hosting_rows():
    # FP8 TP4: the batch is memory-bound, 80 GB less a quarter of the FP8 weights, over a 3,300-token FP8 cache
    kv = 2 * floors.L * (floors.KV // 4) * floors.HD * (PROMPT + CAPPED)
    batch = int((floors.GPU["h100"][2] - floors.P70 / 4) // kv)
    assert batch == 461 == int(glued("dp_cp_self_batch"))
    step, gpu_s, best = self_host(4, 1, batch)
    assert step < 0.040  # within MLPerf's interactive TPOT target
    assert glued("dp_cp_self_bf16") == f"{self_host(8, 2, 16)[2]:.5f}"
    assert glued("dp_cp_self_fp8") == f"{self_host(4, 1, 16)[2]:.5f}"
    assert glued("dp_cp_self_best") == f"{best:.5f}"
    assert glued("dp_cp_large") == f"{L:.5f}"
    large_req = REQ * ((1 - SMALL_SHARE) + SMALL_SHARE * ESCALATE)
    assert glued("dp_cp_self_gpus") == f"{large_req * gpu_s / 86_400 / DIVISOR:,.0f}"
    after = DAYS[4] - large_req * L * (1 - WAIT * (1 - BATCH)) + large_req * best
    assert glued("dp_cp_day5") == f"{after:,.0f}"
    # one TP4 replica all day against the API's price of the same request
    assert glued("dp_cp_be_requests") == f"{4 * PRICE * 24 / L:,.0f}"


def test_current_model_price_cut():
    # Opus 5.5 lists at $4 / $20 against Opus 5's $5 / $25 (whats-new-opus-5 page, read 7 December 2026)
    cut_in, cut_out = 1 - 4.00 / LARGE[0], 1 - 20.00 / LARGE[1]
    assert math.isclose(cut_in, cut_out)
    assert glued("dp_cp_opus55_cut") == f"{cut_in:.0%}" == "20%"
