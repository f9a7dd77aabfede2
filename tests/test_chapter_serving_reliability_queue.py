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
