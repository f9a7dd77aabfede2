"""Sections deployment_plan-500ms-slo and deployment_plan-system-design of "Plan a deployment".

The 500 ms question: the per-token budget, the batch-1 floors with their corrections, and the fleet at
300 requests/s, recomputed from the datasheet rates and Llama 3 70B's shape written out (not through
mk.plan_deployment), and NCCL's latency constants. The framing section: the labels it links exist.
"""
import math
import pathlib

import pytest
import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"

# Llama 3 70B (config.json): 80 layers, d 8192, 64 query heads and 8 KV heads of 128, vocabulary 128256
L, D, H, KV, HD, V = 80, 8192, 64, 8, 128, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
GPU = {"h100": (3.35e12, 989e12, 80e9, 450e9), "h200": (4.8e12, 989e12, 141e9, 450e9),
       "b200": (7.7e12, 2.25e15, 180e9, 900e9)}  # HBM B/s, dense bf16 FLOP/s, HBM bytes, NVLink B/s each way
PROMPT, N, RATE, PRICE, MBU, SPEC = 1000, 150, 300, 2.0, 0.5, 1.8


def kv_per_gpu(ctx, tp, kv_bytes):
    return 2 * L * max(KV // tp, 1) * HD * ctx * kv_bytes


def ring_bytes(tokens, tp):  # one ring all-reduce of (tokens, d) bf16, bytes each GPU sends
    return 2 * (tp - 1) * (tokens * D // tp) * 2


def step(gpu, tp, wb, tokens, logits, attn_flops, kv_read):
    bw, flops, _, link = GPU[gpu]
    rate = flops * (2 if wb == 1 else 1)  # W8A8 at twice the bf16 peak
    matmul = 2 * (P70 - 2 * V * D) * tokens + 2 * V * D * logits
    compute = (matmul + attn_flops) / rate / tp
    memory = ((P70 - V * D) * wb / tp + kv_read) / bw
    return max(memory, compute) + 2 * L * ring_bytes(tokens, tp) / link


def decode(gpu, tp, wb, batch, ctx):  # the cache in the weights' precision, as the section's rows
    return step(gpu, tp, wb, batch, batch, 2 * L * 2 * H * ctx * HD * batch, batch * kv_per_gpu(ctx, tp, wb))


def prefill(gpu, tp, wb, n):
    return step(gpu, tp, wb, n, 1, 2 * L * (2 * H * n * n * HD) // 2, kv_per_gpu(n, tp, wb))


def nccl_fixed(tp):  # NCCL 2.30.7 tuning.cc: ring LL base 6.6 us + 2 (n - 1) NVLink steps of 0.6 us
    return 2 * L * 1e-6 * (6.6 + 2 * (tp - 1) * 0.6)


TTFT = prefill("h100", 8, 1, PROMPT)
BUDGET = (0.5 - TTFT) / (N - 1)


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("deployment_plan"), key)


def test_budget_per_token():
    assert f"{1e3 * TTFT:.0f}" == "19"
    got = [f"{1e3 * (0.5 - TTFT) / (n - 1):.1f}" for n in (100, 150, 250)]
    assert got == ["4.9", "3.2", "1.9"]
    assert [glued(f"dp_e2e_budget_{n}") for n in (100, 150, 250)] == got


def test_nccl_fixed_cost_per_step():
    assert f"{1e6 * nccl_fixed(8) / (2 * L):.1f}" == "15.0"
    assert f"{1e3 * nccl_fixed(8):.1f}" == "2.4" == glued("dp_e2e_ar8")


def real(gpu, tp, wb):  # batch 1: floor at MBU 0.5 plus the fixed all-reduce cost
    return decode(gpu, tp, wb, 1, PROMPT + N) / MBU + nccl_fixed(tp)


def test_h100_corrections_in_turn():
    floor = decode("h100", 8, 1, 1, PROMPT + N)
    got = [f"{1e3 * t:.1f}" for t in (floor, floor + nccl_fixed(8), real("h100", 8, 1))]
    assert got == ["2.6", "5.0", "7.6"]
    assert [glued(f"dp_e2e_h100_{k}") for k in ("floor", "ar", "mbu")] == got
    assert f"{real('h100', 8, 1) / BUDGET:.2f}" == "2.36" == glued("dp_e2e_h100_need")
    assert f"{1e3 * decode('h100', 8, 2, 1, PROMPT + N):.1f}" == "5.2" == glued("dp_e2e_h100_bf16_floor")
    assert decode("h100", 8, 2, 1, PROMPT + N) > BUDGET  # bf16 misses before any correction


def test_speculation_each_shape_needs():
    need = {(g, tp, wb): real(g, tp, wb) / BUDGET for g in GPU for tp, wb in ((8, 2), (8, 1), (4, 1))}
    assert min(need.values()) > 1  # no shape meets the budget without speculation
    assert f"{need['b200', 8, 1]:.2f}" == "1.45" == glued("dp_e2e_b200_need")
    assert f"{1e3 * real('b200', 8, 1):.1f}" == "4.7" == glued("dp_e2e_b200_mbu")
    rest = min(v for k, v in need.items() if k != ("b200", 8, 1))
    assert f"{rest:.2f}" == "1.87" == glued("dp_e2e_next_need")  # H200, FP8, TP8
    assert {k for k, v in need.items() if v <= SPEC} == {("b200", 8, 1)}  # only if DeepSeek-V3's 1.8 carried over
    assert glued("dp_e2e_mtp_fits") == "B200 (HGX) FP8 TP8"
    assert {k for k, v in need.items() if v <= 2.0} == {("b200", 8, 1), ("h200", 8, 1), ("b200", 4, 1)}  # 2x would admit more


def fleet(tp, target):
    ctx, wb = PROMPT + N, 1
    fit = int((GPU["h100"][2] - math.ceil(P70 * wb / tp)) // kv_per_gpu(ctx, tp, wb))
    batch = max(b for b in range(1, fit + 1) if decode("h100", tp, wb, b, ctx) <= target)
    tpot, pre = decode("h100", tp, wb, batch, ctx), prefill("h100", tp, wb, ctx)
    in_flight = RATE * (pre + N * tpot)  # Little's law
    replicas = math.ceil(in_flight / batch + RATE * pre)
    cost = 1e6 * replicas * tp * PRICE / (RATE * N * 3600)  # whole fleet's GPU-hours over its output tokens
    return dict(batch=batch, gpus=replicas * tp, cost=cost, pre=pre, fit=fit, in_flight=in_flight,
                replicas=replicas, tpot=tpot)


def test_fleet_strict_against_restated():
    s, r, r8 = fleet(8, BUDGET), fleet(4, 0.040), fleet(8, 0.040)
    assert (s["batch"], s["gpus"], f"{s['cost']:.2f}") == (36, 88, "1.09")
    assert (r["batch"], r["gpus"], f"{r['cost']:.2f}") == (1323, 44, "0.54")
    assert r["batch"] == r["fit"]  # TP4 is capped by memory, not by the 40 ms target
    assert r8["gpus"] == 64
    assert f"{s['cost'] / r['cost']:.1f}" == "2.0" == glued("dp_e2e_cost_ratio")
    assert [glued(k) for k in ("dp_e2e_strict_cost", "dp_e2e_slo4_cost")] == ["1.09", "0.54"]
    assert (f"{r['in_flight']:,.0f}", r["replicas"], f"{r['in_flight'] / r['replicas']:.0f}") == ("1,600", 11, "145")
    assert r["in_flight"] / r["replicas"] < r["batch"] / 9  # no replica runs near its memory cap
    assert f"{s['in_flight'] / s['replicas']:.0f}" == "14" == glued("dp_e2e_strict_per_replica")
    assert [glued(k) for k in ("dp_e2e_strict_batch", "dp_e2e_strict_gpus", "dp_e2e_slo4_batch", "dp_e2e_slo4_gpus",
                               "dp_e2e_slo8_gpus", "dp_e2e_slo4_in_flight", "dp_e2e_slo4_replicas",
                               "dp_e2e_slo4_per_replica")] == ["36", "88", "1,323", "44", "64", "1,600", "11", "145"]


def test_prefill_share_set_by_the_token_mix_not_the_rate():
    r = fleet(4, 0.040)
    pre1000 = prefill("h100", 4, 1, PROMPT)
    decode_share = r["in_flight"] / r["batch"]
    assert (f"{RATE * pre1000:.1f}", f"{decode_share:.1f}", f"{RATE * r['pre']:.1f}") == ("7.9", "1.2", "9.1")
    assert [glued(k) for k in ("dp_e2e_prefill_1000", "dp_e2e_decode_share", "dp_e2e_prefill_share")] == \
        ["7.9", "1.2", "9.1"]
    assert f"{1e3 * r['pre']:.0f}" == "30" == glued("dp_e2e_slo4_prefill")
    for rate in (3, 30, 300):  # L / B and rate * prefill both scale with the rate: the share does not move
        share = rate * pre1000 / (rate * pre1000 + rate * (r["pre"] + N * r["tpot"]) / r["batch"])
        assert f"{share:.3f}" == f"{RATE * pre1000 / (RATE * pre1000 + decode_share):.3f}"
    busy = (decode_share + RATE * r["pre"]) / r["replicas"]
    assert f"{busy:.0%}" == "93%" == glued("dp_e2e_busy")


def test_strict_shape_needs_a_prefill_pool():
    s = fleet(8, BUDGET)
    per_tok = s["pre"] / (PROMPT + N)
    assert f"{1e6 * per_tok:.0f}" == "19" == glued("dp_e2e_prefill_us")
    assert f"{RATE * s['pre'] / s['replicas']:.0%}" == "59%" == glued("dp_e2e_strict_prefill_time")
    chunk = (BUDGET - decode("h100", 8, 1, 1, PROMPT + N)) / per_tok
    assert f"{chunk:.0f}" == "33" == glued("dp_e2e_chunk")
    assert chunk < PROMPT / 10


def test_restated_tpot_is_a_floor():
    r = fleet(4, 0.040)
    assert f"{1e3 * (r['tpot'] / MBU + nccl_fixed(4)):.0f}" == "72" == glued("dp_e2e_slo4_real_step")
    real = fleet(4, (0.040 - nccl_fixed(4)) * MBU)
    assert real["batch"] == 613 and glued("dp_e2e_slo4_real_batch") == "613"
    assert f"{RATE * PROMPT * 0.040 / r['replicas']:,.0f}" == "1,091" == glued("dp_e2e_step_prompt_tokens")


def test_quoted_question_is_the_sources():
    nb = (BOOK / "deployment_plan.ipynb").read_text()
    assert '\\"What is LLM System Design, and why is it important?\\"' in nb


@pytest.mark.parametrize("chapter, label", [
    ("deployment_plan", "deployment_plan-500ms-slo"), ("serving_reliability", "serving_reliability-multi-region"),
    ("multi_tenant_serving", "multi_tenant_serving-routing"),
    ("prefix_caching", "prefix_caching-rag-path"), ("serving_operations", "serving_operations-guard-models"),
    ("serving_reliability", "serving_reliability-llm-evaluation"), ("serving_reliability", "serving_reliability-rollouts"),
    ("serving_operations", "serving_operations-request-path"), ("multi_tenant_serving", "multi_tenant_serving-latency-targets"),
])
def test_linked_labels_exist(chapter, label):
    assert f"({label})=" in (BOOK / f"{chapter}.ipynb").read_text()
