"""Sections deployment_plan-7b-floors, deployment_plan-7b-four-levers, deployment_plan-100k-a-day and the
cache-budget paragraph of deployment_plan-replica-shape in "Plan a deployment".

Recomputed from the shapes and datasheet rates written out here (Mistral 7B's Table 1 shape, Llama 3 70B's
config.json, the H100 SXM datasheet), not through mk.plan_deployment, and compared with what the cells printed
and glued.
"""
import math

import chapter_outputs

NB = chapter_outputs.notebook("deployment_plan")

# the 7B question: 7B parameters in bf16, 2 TB/s effective, 4,096 cached tokens, a 9 ms SLA
P7, BW7, CTX7, SLA7 = 7_000_000_000, 2e12, 4_096, 0.009
L7, H7, KV7, HD7 = 32, 32, 8, 128  # Mistral 7B, Table 1: 32 layers, 32 heads, 8 KV heads, head_dim 128
PEAK = 989e12  # H100 SXM dense bf16 FLOP/s
W7 = 2 * P7
SEQ7 = 2 * L7 * KV7 * HD7 * 2 * CTX7  # K and V, bf16
FLOPS7 = 2 * P7 + L7 * 4 * H7 * HD7 * CTX7  # weights' products, Q K^T and P V


def step7(batch, weights=W7, seq=SEQ7, peak=PEAK):
    return max((weights + batch * seq) / BW7, batch * FLOPS7 / peak)


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_7b_batch_1_floors():
    assert SEQ7 == 536_870_912 and 2 * L7 * KV7 * HD7 * 2 == 131_072  # 128 KiB a token
    mem1, comp1 = (W7 + SEQ7) / BW7, FLOPS7 / PEAK
    assert f"{1e3 * mem1:.2f}" == "7.27" == glued("dp46_7b_mem1")
    assert f"{FLOPS7 / 1e9:.1f}" == "16.1" == glued("dp46_7b_gflop")
    assert f"{1e6 * comp1:.1f}" == "16.3" == glued("dp46_7b_comp1")
    assert glued("dp46_7b_ratio") == f"{mem1 / comp1:.0f}"
    assert "131,072 B a token" in chapter_outputs.printed(NB, "dp46_7b_seq")


def test_7b_batch_16_and_the_sla():
    t16 = step7(16)
    assert f"{(W7 + 16 * SEQ7) / 1e9:.1f}" == "22.6" == glued("dp46_7b_gb16")
    assert f"{1e3 * t16:.1f}" == "11.3" == glued("dp46_7b_t16")
    assert glued("dp46_7b_agg16") == f"{16 / t16:,.0f}" == "1,417"
    assert t16 > SLA7  # misses 9 ms
    largest = max(b for b in range(1, 64) if step7(b) <= SLA7)
    assert largest == 7 and glued("dp46_7b_bsla") == "7"
    assert f"{1e3 * step7(16, weights=W7 // 2):.1f}" == "7.8" == glued("dp46_7b_w8_16")
    assert glued("dp46_7b_fp8kv") == str(max(b for b in range(1, 64) if step7(b, seq=SEQ7 // 2) <= SLA7)) == "14"


def test_7b_drill_at_8k():
    seq = 2 * SEQ7  # 8,192 tokens, no window
    cases = {"bf16": (W7, seq), "fp8_kv": (W7, seq // 2), "w8": (W7 // 2, seq), "both": (W7 // 2, seq // 2)}
    gb = {k: (w + 16 * s) / 1e9 for k, (w, s) in cases.items()}
    assert [f"{gb[k]:.1f}" for k in cases] == ["31.2", "22.6", "24.2", "15.6"]
    for k, (w, s) in cases.items():
        assert glued(f"dp46_dr_{k}_gb") == f"{gb[k]:.1f}"
        assert glued(f"dp46_dr_{k}_ms") == f"{1e3 * step7(16, weights=w, seq=s):.1f}"
    assert glued("dp46_dr_bf16_ms") == "15.6" and glued("dp46_dr_both_ms") == "7.8"
    assert min(gb["fp8_kv"], gb["w8"]) > SLA7 * BW7 / 1e9 == 18 and glued("dp46_dr_budget") == "18"
    assert gb["fp8_kv"] < gb["w8"]  # the cache is most of the step: FP8 cache beats 8-bit weights
    assert glued("dp46_dr_seq") == f"{seq / 1e9:.2f}" == "1.07" and glued("dp46_dr_cache16") == "17.2"
    assert glued("dp46_7b_slack1") == f"{1e3 * (SLA7 - (W7 + SEQ7) / BW7):.1f}" == "1.7"
    text = chapter_outputs.section(NB, "deployment_plan-7b-floors", end="deployment_plan-mbu-mfu")
    assert "{glue:text}`dp46_dr_both_ms`" in text and "31.2" not in text


def test_four_interventions_ranked():
    base = step7(1)
    gains = {"tensor": base / step7(1, peak=2 * PEAK), "w8": base / step7(1, weights=W7 // 2),
             "b16": 16 * base / step7(16), "kv4": base / step7(1, seq=SEQ7 // 2)}
    assert f"{gains['tensor']:.2f}" == "1.00"
    assert glued("dp46_lv_w8") == f"{gains['w8']:.2f}" == "1.93"
    assert glued("dp46_lv_b16_tput") == f"{gains['b16']:.1f}" == "10.3"
    assert glued("dp46_lv_b16_lat") == f"{step7(16) / base:.2f}" == "1.55"
    assert glued("dp46_lv_kv") == f"{gains['kv4']:.3f}"
    f = SEQ7 / (W7 + SEQ7)  # Amdahl: the cache share, halved
    assert f"{1 / ((1 - f) + f / 2):.3f}" == f"{gains['kv4']:.3f}" == "1.019"
    assert glued("dp46_lv_kv_share") == f"{f:.1%}" == "3.7%"
    assert glued("dp46_lv_kv16") == f"{step7(16) / step7(16, seq=SEQ7 // 2):.2f}" == "1.23"
    prefill = 2 * P7 * CTX7 + L7 * 2 * H7 * HD7 * CTX7**2
    assert glued("dp46_lv_w8_free") == f"{(W7 - W7 // 2) / 1e9:.0f}" == "7"
    assert glued("dp46_lv_prefill") == f"{1e3 * prefill / PEAK:.0f}" == "62"
    lat = sorted(gains, key=lambda k: -(gains[k] if k != "b16" else base / step7(16)))
    assert lat == ["w8", "kv4", "tensor", "b16"]
    text = chapter_outputs.section(NB, "deployment_plan-7b-four-levers", end="deployment_plan-cost-plan")
    chapter_outputs.assert_cited(text, ["ainslie2023gqa"])
    assert "ainslie2023gqa{Abstract, §2.1–2.2}" in text


# Llama 3 70B (config.json) on H100 SXM (80 GB, 3.35 TB/s, 989 TFLOP/s bf16, NVLink 450 GB/s each way)
L, D, H, KV, HD, V = 80, 8192, 64, 8, 128, 128_256
P70 = 70_553_706_496
HBM, BW, LINK = 80 * 10**9, 3.35e12, 450e9


def kv_per_gpu(ctx, tp, kv_bytes):
    return 2 * L * max(KV // tp, 1) * HD * ctx * kv_bytes


def test_cache_budget_tp4_tp8_tp16():
    w = 2 * P70
    seq = 2 * L * KV * HD * 8192 * 2
    assert f"{(4 * HBM - w) / 1e9:.0f}" == "179" == glued("dp46_budget_tp4")
    assert f"{(8 * HBM - w) / 1e9:.0f}" == "499" == glued("dp46_budget_tp8")
    assert glued("dp46_budget_ratio") == f"{(8 * HBM - w) / (4 * HBM - w):.1f}" == "2.8"
    fit = {tp: (HBM - math.ceil(w / tp)) // kv_per_gpu(8192, tp, 2) for tp in (4, 8, 16)}
    assert fit == {4: 66, 8: 185, 16: 212}  # the replica-shape table's 66 and 185; TP16 past h_kv
    assert glued("dp46_seq_tp8") == "185" and glued("dp46_two_tp4") == str(2 * fit[4]) == "132"
    assert glued("dp46_tp8_vs_two_tp4") == f"{fit[8] / (2 * fit[4]):.2f}" == "1.40"
    assert glued("dp46_seq_tp16") == "212" and glued("dp46_budget_seq_tp16") == str((16 * HBM - w) // seq) == "424"


def step70(tp, tokens, logits, attn_flops, kv_read):  # FP8 weights and cache (W8A8 at twice bf16)
    matmul = 2 * (P70 - 2 * V * D) * tokens + 2 * V * D * logits
    compute = (matmul + attn_flops) / (2 * PEAK) / tp
    memory = ((P70 - V * D) / tp + kv_read) / BW
    ring = 2 * (tp - 1) * (tokens * D // tp) * 2
    return max(memory, compute) + 2 * L * ring / LINK


def test_100k_a_day():
    mean = 100_000 / 86_400
    assert glued("dp46_day_mean") == f"{mean:.2f}" == "1.16"
    assert glued("dp46_day_peak") == f"{3 * mean:.2f}" == "3.47"
    tp, prompt, out, tpot = 2, 1000, 300, 0.040  # MLPerf interactive TPOT
    ttft = step70(tp, prompt, 1, 2 * L * (2 * H * prompt * prompt * HD) // 2, kv_per_gpu(prompt, tp, 1))
    assert glued("dp46_day_ttft") == f"{1e3 * ttft:.0f}" == "41"
    ctx, max_seq = prompt + out, (HBM - math.ceil(P70 / tp)) // kv_per_gpu(prompt + out, tp, 1)
    batch = max(b for b in range(1, max_seq + 1)
                if step70(tp, b, b, 2 * L * 2 * H * ctx * HD * b, b * kv_per_gpu(ctx, tp, 1)) <= tpot)
    t = step70(tp, batch, batch, 2 * L * 2 * H * ctx * HD * batch, batch * kv_per_gpu(ctx, tp, 1))
    assert glued("dp46_day_batch") == str(batch) == "419" and glued("dp46_day_tpot") == f"{1e3 * t:.0f}"
    sat = 1 / ((ttft + out * t) / batch + ttft)  # the saturation rate (mk.fleet_estimate's inverse)
    assert glued("dp46_day_cap_sat") == f"{sat:.0f}" == "17"
    assert glued("dp46_day_sat_share") == f"{sat * ttft:.0%}"

    def step(b):  # the decode step at 1,300 tokens
        return step70(tp, b, b, 2 * L * 2 * H * ctx * HD * b, b * kv_per_gpu(ctx, tp, 1))

    def steady(rate):  # TPOT = step(B) / (1 - rate * TTFT), B = rate * (TTFT + out * TPOT), by plain iteration
        b = 1
        while True:
            tpot_b = step(b) / (1 - rate * ttft)
            nb = max(1, math.ceil(rate * (ttft + out * tpot_b)))
            if nb > max_seq:
                return math.inf, nb
            if nb == b:
                return tpot_b, b
            b = nb

    assert steady(0.98 * sat)[0] > 1.5 * tpot  # the saturation rate misses the TPOT target badly
    assert glued("dp46_day_sat_tpot") == f"{1e3 * steady(0.98 * sat)[0]:.0f}"
    # the SLO-bound capacity by a grid of 0.01 requests/s: independent of the cell's bisection
    cap = max(r / 100 for r in range(100, int(100 * sat)) if steady(r / 100)[0] <= tpot)
    assert 13 < cap < 15 and abs(float(glued("dp46_day_cap")) - cap) <= 0.5
    assert glued("dp46_day_slo_batch") in {str(steady(cap)[1]), str(steady(cap + 0.01)[1])}
    assert glued("dp46_day_slo_share") == f"{cap * ttft:.0%}"
    assert math.ceil(3 * mean / cap) == 1 and glued("dp46_day_gpus") == "4"  # N + 1 replicas of TP2
    assert abs(float(glued("dp46_day_busy").rstrip("%")) - 100 * mean / (2 * cap)) < 0.1
    assert glued("dp46_day_usd") == "192" and glued("dp46_day_usd_m") == f"{192 / 30:.2f}" == "6.40"
    assert glued("dp46_day_mtok_all") == "130" and glued("dp46_day_usd_all") == f"{192 / 130:.2f}" == "1.48"
    assert abs(float(glued("dp46_day_headroom")) - 2 * cap / (3 * mean)) < 0.1
    assert abs(int(glued("dp46_day_queue")) - 2 * cap * (2 - ttft)) <= 1
    assert abs(float(glued("dp46_day_spare")) - (2 * cap - mean) * 86_400 / 1e6) < 0.1
    ttft8k = step70(tp, 8192, 1, 2 * L * (2 * H * 8192 * 8192 * HD) // 2, kv_per_gpu(8192, tp, 1))
    assert glued("dp46_day_ttft8k") == f"{1e3 * ttft8k:.0f}" and ttft8k < 0.5
    text = chapter_outputs.section(NB, "deployment_plan-100k-a-day", end="deployment_plan-open-conversations")
    chapter_outputs.assert_cited(text, ["mlperfconf", "vllmschedulingpolicy"])
    for label in ("serving_reliability-queue-depth", "multi_tenant_serving-cold-start",
                  "multi_tenant_serving-self-host-break-even", "scheduler_design-priorities"):
        assert f"{{ref}}`{label}`" in text and label in chapter_outputs.book_labels()
