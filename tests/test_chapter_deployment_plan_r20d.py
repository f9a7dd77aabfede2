"""Sections deployment_plan-500ms-slo and deployment_plan-system-design of "Plan a deployment".

The 500 ms question: the per-token budget, the batch-1 floors with their corrections, and the fleet at
300 requests/s, recomputed from the datasheet rates and Llama 3 70B's shape written out (not through
mk.plan_deployment), and NCCL's latency constants. The framing section: the labels it links exist.
"""
import json
import math
import pathlib

import pytest

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
    nb = json.loads((BOOK / "deployment_plan.ipynb").read_text())
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == key:
                return out["data"]["application/papermill.record/text/plain"].strip("'")
    raise KeyError(key)


def test_budget_per_token():
    assert f"{1e3 * TTFT:.0f}" == "19"
    got = [f"{1e3 * (0.5 - TTFT) / (n - 1):.1f}" for n in (100, 150, 250)]
    assert got == ["4.9", "3.2", "1.9"]
    assert [glued(f"dp_e2e_budget_{n}") for n in (100, 150, 250)] == got


def test_nccl_fixed_cost_per_step():
    assert f"{1e6 * nccl_fixed(8) / (2 * L):.1f}" == "15.0"
    assert f"{1e3 * nccl_fixed(8):.1f}" == "2.4" == glued("dp_e2e_ar8")


def test_h100_corrections_in_turn():
    floor = decode("h100", 8, 1, 1, PROMPT + N)
    ar = floor + nccl_fixed(8)
    got = [f"{1e3 * t:.1f}" for t in (floor, ar, ar / SPEC, (floor / MBU + nccl_fixed(8)) / SPEC)]
    assert got == ["2.6", "5.0", "2.8", "4.2"]
    assert [glued(f"dp_e2e_h100_{k}") for k in ("floor", "ar", "spec", "mbu")] == got
    assert f"{1e3 * decode('h100', 8, 2, 1, PROMPT + N):.1f}" == "5.2" == glued("dp_e2e_h100_bf16_floor")
    assert decode("h100", 8, 2, 1, PROMPT + N) > BUDGET  # bf16 misses before any correction


def test_only_b200_fp8_tp8_meets_the_budget_with_every_correction():
    meets = {(g, tp, wb) for g in GPU for tp, wb in ((8, 2), (8, 1), (4, 1))
             if (decode(g, tp, wb, 1, PROMPT + N) / MBU + nccl_fixed(tp)) / SPEC <= BUDGET}
    assert meets == {("b200", 8, 1)}
    assert f"{1e3 * (decode('b200', 8, 1, 1, PROMPT + N) / MBU + nccl_fixed(8)) / SPEC:.1f}" == "2.6"


def fleet(tp, target):
    ctx, wb = PROMPT + N, 1
    fit = int((GPU["h100"][2] - math.ceil(P70 * wb / tp)) // kv_per_gpu(ctx, tp, wb))
    batch = max(b for b in range(1, fit + 1) if decode("h100", tp, wb, b, ctx) <= target)
    tpot, pre = decode("h100", tp, wb, batch, ctx), prefill("h100", tp, wb, ctx)
    in_flight = RATE * (pre + N * tpot)  # Little's law
    replicas = math.ceil(in_flight / batch + RATE * pre)
    return batch, replicas * tp, 1e6 * tp * PRICE / 3600 * tpot / batch, pre, fit


def test_fleet_strict_against_restated():
    s_batch, s_gpus, s_cost, _, _ = fleet(8, BUDGET)
    r_batch, r_gpus, r_cost, r_pre, r_fit = fleet(4, 0.040)
    _, r8_gpus, _, _, _ = fleet(8, 0.040)
    assert (s_batch, s_gpus, f"{s_cost:.2f}") == (36, 88, "0.40")
    assert (r_batch, r_gpus, f"{r_cost:.2f}") == (1323, 44, "0.06")
    assert r_batch == r_fit  # TP4 is capped by memory, not by the 40 ms target
    assert r8_gpus == 64
    assert f"{s_cost / r_cost:.1f}" == "6.7"
    assert f"{1e3 * r_pre:.0f}" == "30" and f"{RATE * r_pre:.1f}" == "9.1"
    assert RATE * r_pre > r_gpus / 4 / 2  # prompts keep most of the TP4 replicas busy
    assert [glued(k) for k in ("dp_e2e_strict_batch", "dp_e2e_strict_gpus", "dp_e2e_slo4_batch",
                               "dp_e2e_slo4_gpus", "dp_e2e_slo8_gpus", "dp_e2e_cost_ratio")] == \
        ["36", "88", "1,323", "44", "64", "6.7"]


@pytest.mark.parametrize("chapter, label", [
    ("deployment_plan", "deployment_plan-500ms-slo"), ("multi_tenant_serving", "multi_tenant_serving-routing"),
    ("prefix_caching", "prefix_caching-rag-path"), ("serving_operations", "serving_operations-guard-models"),
    ("serving_reliability", "serving_reliability-llm-evaluation"), ("serving_reliability", "serving_reliability-rollouts"),
    ("serving_operations", "serving_operations-request-path"), ("multi_tenant_serving", "multi_tenant_serving-latency-targets"),
])
def test_linked_labels_exist(chapter, label):
    assert f"({label})=" in (BOOK / f"{chapter}.ipynb").read_text()
