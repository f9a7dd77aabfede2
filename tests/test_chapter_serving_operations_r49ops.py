"""Sections serving_operations-first-useful-p95 and serving_operations-hosted-bill-triage (r49ops).

The 3 s budget: the prefill of the new tokens, the decode step and the guard's hold-back, recomputed from
Llama 3 8B's shape written out and the H100 SXM datasheet rates (not through the kit); the bill's
findings recomputed from the token counts and prices the section states. Also: the usage fields the
section names are cited, and the labels it links exist.
"""
import math

import chapter_outputs

NB = chapter_outputs.notebook("serving_operations")

# Llama 3 8B: 32 layers, d 4096, 32 query heads and 8 KV heads of 128, d_ff 14336, vocabulary 128256
L, D, H, KV, HD, FF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
PARAMS = 8_030_261_248  # untied embedding and head, norms included
BW, PEAK = 3.35e12, 989e12  # H100 SXM: HBM bytes/s, dense bf16 FLOP/s
KV_TOKEN = 2 * L * KV * HD * 2  # bytes of bf16 cache a token


def prefill_flops(n):  # projections and SwiGLU per token, the last token's logits, causal attention
    per_token = L * (2 * D * H * HD + 2 * D * KV * HD + 3 * D * FF)
    return 2 * n * per_token + 2 * V * D + L * 2 * H * HD * n * (n + 1)


TPOT = (2 * PARAMS + (32 * 12_000 + 32) * KV_TOKEN) / BW  # batch 32 at 12,000 tokens each, plus the 32 new: memory-bound
PREFILL = (prefill_flops(12_000) - prefill_flops(2_000)) / PEAK / 0.5
HOLD = 32 * TPOT + prefill_flops(82) / PEAK / 0.5


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_decode_step_is_memory_bound_and_matches():
    compute = (2 * 32 * (PARAMS - V * D) + 2 * 32 * 12_000 * L * 2 * H * HD) / PEAK
    assert compute < TPOT / 10
    assert glued("so_ttfu_tpot") == f"{1e3 * TPOT:.1f}" == "19.8"


def test_prefill_preamble_and_hold_back():
    assert glued("so_ttfu_prefill") == f"{1e3 * PREFILL:.0f}" == "356"
    assert glued("so_ttfu_preamble") == f"{1e3 * 30 * TPOT:.0f}"
    assert glued("so_ttfu_hold") == f"{1e3 * HOLD:.0f}"
    assert glued("so_ttfu_think") == f"{1e3 * 400 * TPOT:.0f}"


def test_sum_of_budgets_under_target_and_thinking_over():
    total = 0.05 + 0.15 + 0.15 + 0.03 + 0.30 + PREFILL + 30 * TPOT + HOLD + 0.10
    assert glued("so_ttfu_sum") == f"{1e3 * total:.0f}"
    assert total < 3.0 < total + 400 * TPOT
    assert glued("so_ttfu_with_think") == f"{1e3 * (total + 400 * TPOT):.0f}"


def test_p95_of_sum_is_below_sum_of_p95s():
    assert int(glued("so_ttfu_p95_sum")) < int(glued("so_ttfu_sum"))


def test_rare_stalls_break_the_sum_of_p95s():
    """Nine stages each stalling on 4% of requests: every stage's p95 hides the stall, the end-to-end p95 does not."""
    stall, stages = 0.04, 9
    share = 1 - (1 - stall) ** stages
    assert stall < 0.05 < share  # below each stage's tail, above the end-to-end tail
    assert glued("so_ttfu_stages") == str(stages)
    assert glued("so_ttfu_stall_p") == "4"
    assert glued("so_ttfu_stall_share") == f"{100 * share:.0f}" == "31"
    text = chapter_outputs.section(NB, "serving_operations-first-useful-p95", end="serving_operations-long-outputs")
    assert "not subadditive" in text and "not a bound" in text
    assert "safe bound" not in text and "bounds the end-to-end p95" not in text


PRICE_IN, PRICE_CACHED, PRICE_OUT = 1.0, 0.1, 4.0


def bill(calls=1.0, hit=0.9, chunks=5, think=0, fail=0.0, escalate=0.0):
    cached = hit * 1_500
    fresh = (1 - hit) * 1_500 + 150 + chunks * 300
    call = (fresh * PRICE_IN + cached * PRICE_CACHED + (300 + think) * PRICE_OUT) / 1e6
    return calls * (1 + fail + fail ** 2) * call * (1 + 5 * escalate)


def test_bill_decomposition():
    plan = bill()
    steps = [bill(hit=0.05), bill(hit=0.05, chunks=12), bill(hit=0.05, chunks=12, think=900),
             bill(calls=2, hit=0.05, chunks=12, think=900), bill(calls=2, hit=0.05, chunks=12, think=900, fail=0.1),
             bill(calls=2, hit=0.05, chunks=12, think=900, fail=0.1, escalate=0.1)]
    prev = plan
    for i, now in enumerate(steps):
        assert glued(f"so_bill_step{i}") == f"{now / prev:.2f}"
        prev = now
    ratios = [steps[0] / plan] + [steps[i] / steps[i - 1] for i in range(1, 6)]
    text = chapter_outputs.section(NB, "serving_operations-hosted-bill-triage", end="serving_operations-ttft-tpot-levers")
    order = sorted(range(6), key=lambda i: -ratios[i])  # the prose must name the steps largest first
    positions = [text.index(f"so_bill_step{i}") for i in order]
    assert positions == sorted(positions), order
    assert glued("so_bill_plan") == f"{1e3 * plan:.3f}" == "3.135"
    assert glued("so_bill_x") == f"{steps[-1] / plan:.1f}" == "10.6"
    assert math.isclose(steps[-1] / plan, math.prod(s / p for s, p in zip(steps, [plan] + steps[:-1])))


def test_sections_cite_and_link():
    text = chapter_outputs.section(NB, "serving_operations-hosted-bill-triage", end="serving_operations-ttft-tpot-levers")
    for field in ("reasoning_tokens", "cached_tokens", "cache_read_input_tokens", "thinking_tokens"):
        assert field in text
    chapter_outputs.assert_cited(text, ["openaipythonsdk", "anthropicthinkingbudget"])
    first = chapter_outputs.section(NB, "serving_operations-first-useful-p95", end="serving_operations-long-outputs")
    chapter_outputs.assert_cited(first, ["nemoguardrailsstreaming", "dean2013tail"])
    labels = chapter_outputs.book_labels()
    for ref in ("prefix_caching-rag-path", "serving_operations-guard-models", "scheduler_design-hosted-caching",
                "multi_tenant_serving-spend-budgets", "multi_tenant_serving-routing"):
        assert ref in labels
