"""mha_kit.collectives against its sources, and the communication numbers the chapters quote.

Sources: Thakur, Rabenseifner & Gropp 2005 sec. 4 (ring all-reduce: 2(n-1) steps, 2(n-1)/n of the
message per rank); NCCL 2.30.7 src/graph/tuning.cc (ncclTunerConstantsDefaults, ncclTopoTuneModel);
Korthikanti et al. 2022 sec. 4.2.2 (sequence parallelism moves the same bytes).
"""
import math

import pytest

import mha_kit as mk


def test_ring_steps_and_bytes_match_thakur():
    steps, factor = mk.collective_steps_and_factor(8, "ring")
    assert steps == 14 and factor == pytest.approx(14 / 8)
    # the ring's bytes are all_reduce_bytes_per_gpu's: 2 (t - 1) / t of the message
    assert factor * 8192 * 2 == mk.all_reduce_bytes_per_gpu(8192, 8)


def test_tree_one_shot_two_shot():
    assert mk.collective_steps_and_factor(16, "tree") == (8, 2.0)
    assert mk.collective_steps_and_factor(8, "one-shot") == (1, 7.0)
    assert mk.collective_steps_and_factor(8, "two-shot") == (2, 14 / 8)


def test_collective_time_is_alpha_plus_beta():
    t = mk.collective_time(1e6, 4, "ring", 1e-6, 1e9, base_latency_s=5e-6)
    assert t == pytest.approx(5e-6 + 6 * 1e-6 + 1.5 * 1e6 / 1e9)


def test_nccl_latency_one_node_ring_ll():
    # baseLat Ring LL 6.6 us + 2 (8 - 1) steps x NVLink Ring LL 0.6 us
    assert mk.nccl_allreduce_latency_s(8, 1, "ring", "LL") == pytest.approx(1e-6 * (6.6 + 14 * 0.6))


def test_nccl_latency_across_nodes():
    # ring: 254 steps, 30 over the network at 2.7 us, the rest at max(0.6, 1.0 net overhead)
    assert mk.nccl_allreduce_latency_s(8, 16, "ring", "LL") == pytest.approx(1e-6 * (6.6 + 224 * 1.0 + 30 * 2.7))
    # tree: chain of 8 in the node, log2(16) network levels at Tree LL 5.0 us, both ways
    assert mk.nccl_allreduce_latency_s(8, 16, "tree", "LL") == pytest.approx(1e-6 * (6.8 + 2 * (7 * 0.6 + 4 * 5.0)))
    assert mk.nccl_allreduce_latency_s(8, 16, "tree") < mk.nccl_allreduce_latency_s(8, 16, "ring")


def test_sequence_parallel_moves_the_same_bytes():
    plain = mk.tp_layer_comm_bytes(8192, 8192, 8)
    sp = mk.tp_layer_comm_bytes(8192, 8192, 8, sequence_parallel=True)
    assert plain["sent"] == sp["sent"] == 2 * mk.all_reduce_bytes_per_gpu(8192 * 8192, 8)
    assert (plain["activation_rows"], sp["activation_rows"]) == (8192, 1024)


def test_afd_bytes():
    out, back = mk.afd_bytes_per_step(256, 7168, 61)
    assert (out, back) == (256 * 7168 * 61, 2 * 256 * 7168 * 61)  # fp8 there, bf16 back
    assert mk.afd_bytes_per_step(256, 7168, 61, copies=8)[0] == 8 * out


def test_errors():
    with pytest.raises(ValueError, match="at least 2 ranks"):
        mk.collective_steps_and_factor(1, "ring")
    with pytest.raises(ValueError, match="algorithm must be one of"):
        mk.collective_time(1, 8, "butterfly", 0, 1)
    with pytest.raises(ValueError, match="bytes_per_s must be a positive"):
        mk.collective_time(1, 8, "ring", 0, 0)
    with pytest.raises(ValueError, match="message_bytes must be"):
        mk.collective_time(-1, 8, "ring", 0, 1)
    with pytest.raises(ValueError, match="step_latency_s must be"):
        mk.collective_time(1, 8, "ring", -1, 1)
    with pytest.raises(ValueError, match="NCCL_PROTO"):
        mk.nccl_allreduce_latency_s(8, 1, "ring", "LL64")
    with pytest.raises(ValueError, match="NCCL_ALGO"):
        mk.nccl_allreduce_latency_s(8, 1, "nvls")
    with pytest.raises(ValueError, match="at least 2 ranks"):
        mk.nccl_allreduce_latency_s(1, 1, "ring")
    with pytest.raises(ValueError, match="under sequence parallelism"):
        mk.tp_layer_comm_bytes(1, 8192, 8, sequence_parallel=True)
    with pytest.raises(ValueError, match="divisible by tp"):
        mk.tp_layer_comm_bytes(1, 7, 8)


# --- the chapters' numbers, recomputed independently ---

def test_vllm_custom_allreduce_token_limits_llama70b_tp8():
    token_bytes = 8192 * 2  # d = 8192, bf16
    assert max(t for t in range(1, 100) if t * token_bytes < 256 * 1024) == 15  # one-shot below 256 KiB
    assert max(t for t in range(1, 1000) if t * token_bytes < 8 * 1024 * 1024) == 511  # buffer 8 MiB


def test_kv_regions_of_an_8k_llama70b_prompt_per_gpu():
    blocks = 8192 // 16
    assert blocks * 80 * 2 == 81_920
    assert 16 * (8 // 8) * 128 * 2 == 4096  # one region: 16 tokens x 1 kv head x 128 x bf16


def test_dead_ep_gpu_touches_most_tokens():
    p = 1 - (1 - 8 / 256) ** 58  # DeepSeek-V3: 256 experts, top-8, 58 MoE layers
    assert math.isclose(p, 0.842, abs_tol=0.001)
