"""Chapter "Overload, failures and rollouts", section serving_reliability-queue-depth: the queue depths
it prints, recomputed by hand (products written out), not read back from the notebook."""
import math

import mha_kit as mk


def test_rag_budget_depth():
    wait_ms = 800 - 220 - 60 - 160  # target minus retrieval, overhead and the request's own prefill
    assert wait_ms == 360
    assert wait_ms // 160 == 2 == mk.admission_queue_depth(0.800, 0.280, 0.160)
    assert (4 * wait_ms) // 160 == 9 == mk.admission_queue_depth(0.800, 0.280, 0.160, replicas=4)


def test_chat_budget_depth_from_a_hand_prefill_floor():
    # Llama 3 8B: 8,030,261,248 parameters, of which the 128,256 x 4,096 embedding table does no FLOPs;
    # 1,200 uncached prompt tokens at 2 FLOPs per weight, at the H100 SXM's 989 TFLOP/s bf16 dense.
    linear_s = 2 * (8_030_261_248 - 128_256 * 4_096) * 1_200 / 989e12
    assert 0.0181 < linear_s < 0.0183
    facts, gpu = mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"]
    floor_s = mk.roofline_step(facts, gpu)(1_200, 0, 0)
    assert linear_s <= floor_s < 1.01 * linear_s  # attention over 1,200 tokens adds under 1%
    by_hand = math.floor((0.400 - 0.050 - linear_s) / linear_s)
    assert by_hand == 18 == mk.admission_queue_depth(0.400, 0.050, floor_s)


def test_chat_depth_at_40_percent_of_peak_chunked_and_the_fleet():
    # Llama 3 8B: 7,504,924,672 parameters that multiply a token (8,030,261,248 less the embedding table).
    linear = 2 * (8_030_261_248 - 128_256 * 4_096)
    # attention of one query against one earlier token: QK^T and PV, 2 FLOPs per multiply-add,
    # 32 heads x 128 dims, 32 layers
    attn = 2 * 2 * 32 * 128 * 32
    flops = linear * 1_200 + attn * 1_200 * (800 + 600)  # 1,200 new tokens over 800 cached and each other
    achieved = 0.40 * 989e12
    prefill = flops / achieved
    assert 0.0475 < prefill < 0.0480
    assert math.floor((0.400 - 0.050 - prefill) / prefill) == 6 == mk.admission_queue_depth(0.400, 0.050, prefill)
    # the decodes' part of a step: weights (bf16) plus 32 caches of 2,000 tokens, 128 KiB a token, at 3.35 TB/s
    weights = 2 * 8_030_261_248
    decode_part = (weights + 32 * 2_000 * 131_072 + 32 * 131_072) / 3.35e12
    assert 0.0072 < decode_part < 0.0074
    per_token = flops / 1_200 / achieved
    chunk = int((0.030 - decode_part) / per_token) // 128 * 128
    assert chunk == 512  # 605 tokens fit under 30 ms; the largest multiple of 128 below
    step_s = decode_part + chunk * per_token
    own, drain = 3 * step_s, 1_200 / 512 * step_s  # ceil(1,200 / 512) = 3 chunks
    assert math.floor((0.400 - 0.050 - own) / drain) == 4
    assert math.ceil(35 * drain) == 3 and 1.6 < 35 * prefill < 1.7
    assert math.floor(3 * (0.400 - 0.050 - own) / drain) == 12
