"""Section serving_reliability-token-rate-limits: two tenants at the same RPM, the reservation's cost, retry-after.

Recomputed by hand: Llama 3 8B's cache bytes per token (32 layers, 8 KV heads of 128, bf16), the H100 SXM's
80 GB, 3.35 TB/s and 989 TFLOP/s, a decode step that reads the weights and every cached token, and Little's law
for the reservations; compared with the chapter's stored outputs.
"""
import math

import pytest
import chapter_outputs

import mha_kit as mk

KV = 2 * 32 * 8 * 128 * 2  # bytes a token: K and V, 32 layers, 8 KV heads of 128, bf16
HBM, BW, PEAK = 80e9, 3.35e12, 989e12
FACTS = mk.MODEL_FACTS["llama-3-8b"]
WEIGHTS = 2 * mk.dense_decoder_params(FACTS)


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("serving_reliability"), key)


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


def test_reservation_throttles_a_large_max_tokens():
    by_tokens = 80_000 / 60 / 300
    held = 300 * 0.030
    assert glued("sr_tpm_by_tokens") == "4.44"
    for max_tokens, in_flight, share in ((4_096, 19, "48%"), (1_024, 78, "100%"), (512, 156, "100%")):
        assert 80_000 // max_tokens == in_flight
        rate = min(by_tokens, in_flight / held)
        assert glued(f"sr_tpm_rate_{max_tokens}") == f"{rate:.2f}"
        assert glued(f"sr_tpm_share_{max_tokens}") == share
    assert glued("sr_tpm_rate_4096") == "2.11"
    assert glued("sr_tpm_over_4096") == f"{4_096 / 300:.1f}" == "13.7"


def test_retry_after():
    assert math.ceil((30_000 - 10_000) / (400_000 / 60)) == 3 == int(glued("sr_tpm_retry_after"))
    assert (30_000 - 10_000) / (400_000 / 60) == pytest.approx(3.0)
