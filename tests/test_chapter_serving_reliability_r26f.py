"""Section serving_reliability-token-rate-limits: two tenants at the same RPM, the reservation's cost, retry-after.

Recomputed by hand: Llama 3 8B's cache bytes per token (32 layers, 8 KV heads of 128, bf16), the H100 SXM's
80 GB, 3.35 TB/s and 989 TFLOP/s, a decode step that reads the weights and every cached token, and an independent
simulation of the reserve/settle token bucket; compared with the chapter's stored outputs.
"""
import math

import pytest
import chapter_outputs

import mha_kit as mk

KV = 2 * 32 * 8 * 128 * 2  # bytes a token: K and V, 32 layers, 8 KV heads of 128, bf16
HBM, BW, PEAK = 80e9, 3.35e12, 989e12
FACTS = mk.MODEL_FACTS["llama-3-8b"]
WEIGHTS = 2 * mk.dense_decoder_params(FACTS)


NB = chapter_outputs.notebook("serving_reliability")  # read once: glued() is called for every value


def glued(key):
    return chapter_outputs.glued(NB, key)


def seconds_per_request(prompt, out):
    batch = min(256, (int(0.9 * HBM) - WEIGHTS) // ((prompt + out) * KV))
    step = (WEIGHTS + KV * (batch * (prompt + out // 2) + batch)) / BW  # decode is bandwidth-bound here
    assert step > 2 * mk.dense_decoder_params(FACTS) * batch / PEAK
    return mk.prefill_seconds(FACTS, prompt, PEAK) + out * step / batch


def test_same_rpm_different_capacity():
    ta, tb = 500 + 200, 8_000 + 2_000
    assert (60 * ta, 60 * tb) == (42_000, 600_000)
    ga, gb = seconds_per_request(500, 200), seconds_per_request(8_000, 2_000)
    assert glued("sr_tpm_tokens_ratio") == f"{tb / ta:.1f}" == "14.3"
    assert glued("sr_tpm_gpu_ratio") == f"{gb / ga:.1f}"
    assert gb / ga > 50  # RPM alone lets B take many times A's GPU time
    assert glued("sr_tpm_gpu_min_b") == f"{60 * gb:.1f}" and 60 * gb > 60  # more than one H100
    assert glued("sr_tpm_gpu_min_a") == f"{60 * ga:.2f}"
    assert glued("sr_tpm_per_tok_ratio") == f"{(gb / tb) / (ga / ta):.1f}"


def bucket(max_tokens, cap=80_000, actual=300, hold=9.0, dt=0.05, seconds=600):
    """Independent event-stepped OTPM bucket: continuous refill, reserve max_tokens, refund the rest at settlement."""
    level, out, starts = float(cap), [], []  # out: (settle time, count)
    for k in range(round(seconds / dt)):
        t = k * dt
        level = min(cap, level + cap / 60 * dt + sum(n for s, n in out if s <= t + 1e-9) * (max_tokens - actual))
        out = [(s, n) for s, n in out if s > t + 1e-9]
        n = int(level // max_tokens)
        level -= n * max_tokens
        if n:
            out.append((t + hold, n))
            starts += [t] * n
    return starts


def test_large_max_tokens_costs_burst_not_steady_rate():
    by_tokens = 80_000 / 60 / 300
    assert glued("sr_tpm_by_tokens") == "4.44"
    assert glued("sr_tpm_otpm") == "80,000" and glued("sr_tpm_actual") == "300" and glued("sr_tpm_tpot_ms") == "30"
    for max_tokens, burst in ((4_096, 19), (1_024, 78), (512, 156), (300, 266)):
        assert 80_000 // max_tokens == burst == int(glued(f"sr_tpm_burst_{max_tokens}"))
    starts = bucket(4_096)
    min1 = sum(t < 60 for t in starts) / 60
    min2 = sum(60 <= t < 120 for t in starts) / 60
    late = sum(t >= 300 for t in starts) / 300
    assert float(glued("sr_tpm_min1_4096")) == pytest.approx(min1, abs=0.05)
    assert float(glued("sr_tpm_min2_4096")) == pytest.approx(min2, abs=0.05)
    assert float(glued("sr_tpm_late_4096")) == pytest.approx(late, abs=0.05)
    assert min1 < 0.7 * by_tokens < late  # slow first minute, near full rate later: not a permanent halving
    assert glued("sr_tpm_late_share_4096") in ("99%", "100%")
    assert glued("sr_tpm_min1_share_4096") == f"{float(glued('sr_tpm_min1_4096')) / by_tokens:.0%}"
    assert glued("sr_tpm_tau") == f"{9 / -math.log(1 - 300 / 4_096):.0f}" == "118"
    assert glued("sr_tpm_no_refund") == f"{80_000 / 60 / 4_096:.2f}" == "0.33"
    assert glued("sr_tpm_over_4096") == f"{4_096 / 300:.1f}" == "13.7"
    assert glued("sr_tpm_rpm") == "60"


def test_retry_after():
    assert math.ceil((30_000 - 10_000) / (400_000 / 60)) == 3 == int(glued("sr_tpm_retry_after"))
    assert (30_000 - 10_000) / (400_000 / 60) == pytest.approx(3.0)
