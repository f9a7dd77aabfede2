"""Claims of book/tensor_parallel.ipynb recomputed by hand (vLLM's all-reduce paths, QuickReduce's cost)."""
import json
from pathlib import Path

import pytest

import mha_kit as mk

KIB, MIB = 1024, 1024**2
MODELS = json.loads((Path(__file__).parent / "data" / "model_configs.json").read_text())["models"]


def _hidden(name="Meta Llama 3 70B"):
    return next(m["hidden_size"] for m in MODELS if m["name"] == name)


def test_vllm_default_path_thresholds_tp8_hopper():
    d = _hidden()
    assert d == 8192
    # all_reduce_utils.py: custom AR capped at 256 KiB (9.0, 8 GPUs) with symmetric memory on, symm mem up to 64 MiB
    assert 256 * KIB // (2 * d) - 1 == 15  # largest token count still one-shot
    assert 64 * MIB // (2 * d) - 1 == 4095  # largest token count on the symmetric-memory kernel
    assert 8 * MIB // (2 * d) - 1 == 511  # custom kernel's limit with symmetric memory off (8 MiB buffer)
    assert 4096 * d * 2 == 64 * MIB  # a 4,096-token prefill is not below the cap, so it goes to NCCL


def test_quickreduce_measured_cost():
    # vLLM PR 19744, TP 4, FP16: 8 MiB 118.31 us before, 64.23 us with INT4
    assert f"{118.31 / 64.23:.1f}" == "1.8" and f"{36.64 / 28.49:.2f}" == "1.29"
    # vLLM PR 45666: INT3 accuracy recovery on three MoE models
    assert f"{min(0.9922, 0.9953, 1.0055):.0%}" == "99%"


def test_expert_parallel_rows_and_tensor_parallel_slices_for_deepseek_v3():
    """tensor_parallel-dp-attention: 8 DP-attention ranks of 64 decode tokens, DeepSeek-V3 (256 routed experts,
    top-8, expert width 2,048, d = 7,168; arXiv:2412.19437 sec. 4.2 and config.json)."""
    n, b = 8, 64
    assert n * b * 8 / 256 == 16  # rows each expert sees per MoE layer, all ranks pooled
    assert 2048 // n == 256  # each expert's width per GPU under TP8 of the experts
    ring = 2 * (n - 1) * (n * b * 7168 * 2) // n  # ring all-reduce of every token's bf16 output, sent per GPU
    assert ring == 12_845_056 == mk.all_reduce_bytes_per_gpu(n * b * 7168, n)


def test_registering_a_60_gib_pool_at_the_measured_rates():
    """tensor_parallel-rdma-registration: libfabric #4738 (256 GB in over 20 s), Mooncake PR 855 (500 GB, 49.198 s)."""
    pool = 60 * 2**30
    assert round(20.0 / 256e9 * 1e12) == 78 and round(49.198 / 500e9 * 1e12) == 98  # ms per GB
    assert (round(20.0 * pool / 256e9), round(49.198 * pool / 500e9)) == (5, 6)


def test_gated_mlp_doubles_the_all_reduce_term_and_moves_the_2d_balance():
    # 2D weight-stationary, continuous X: 2BD/X + m * 2BFX/n with m = 1 (plain) or 2 (gate and up)
    b, d, f, n = 64, 8192, 4 * 8192, 256
    plain_x, gated_x = (n * d / f) ** 0.5, (n * d / (2 * f)) ** 0.5
    plain = 2 * b * d / plain_x + 2 * b * f * plain_x / n
    gated = 2 * b * d / gated_x + 2 * 2 * b * f * gated_x / n
    assert plain == pytest.approx(4 * b * (d * f / n) ** 0.5)
    assert gated / plain == pytest.approx(2**0.5)
    for x in (gated_x * 0.9, gated_x * 1.1):  # the balance is the minimum
        assert 2 * b * d / x + 4 * b * f * x / n > gated
    # the mha_kit count with d_ff = 2F is the gated MLP's: its best X is the smaller one
    assert mk.weight_stationary_comm(b, d, 2 * f, n)[2] <= mk.weight_stationary_comm(b, d, f, n)[2]


def _llama3_8b_bf16_gradient_bytes():
    # Llama 3 8B (config.json): d 4096, 32 layers, 8 KV heads of 128, d_ff 14336, vocabulary 128256, untied head
    d, kv, ff = 4096, 8 * 128, 14336
    per_layer = d * d + 2 * d * kv + d * d + 3 * d * ff + 2 * d  # q, k, v, o, gate, up, down, two norms
    params = 32 * per_layer + 2 * 128256 * d + d
    assert params == 8_030_261_248
    return 2 * params


def test_gradient_all_reduce_across_dgx_h100_nodes():
    """tensor_parallel-scaling-bottleneck: ring all-reduce of Llama 3 8B's bf16 gradients. Inside a node the bus
    is one GPU's NVLink 4 (450 GB/s); across DGX H100 nodes NCCL's rings run through all 8 NICs of a node,
    8 x 400 Gb/s = 400 GB/s (Scaling Book Part 12, "Cross-node collectives"; NCCL 2.30.7 search.cc, tuning.cc).
    Fixed cost: NCCL's tuner, ring, Simple: base 8.4 us, 3.4 us an NVLink step, 14 us a network step, and an
    intra-node step across nodes at least 3 us."""
    g = _llama3_8b_bf16_gradient_bytes()
    fixed_1 = (8.4 + 14 * 3.4) * 1e-6  # 2 (8 - 1) NVLink steps
    fixed_2 = (8.4 + 28 * 3.4 + 2 * 14) * 1e-6  # 2 (16 - 1) steps, 2 of them across the network
    assert round(fixed_1 * 1e6, 1) == 56.0 and round(fixed_2 * 1e6, 1) == 131.6
    t8 = fixed_1 + 2 * 7 / 8 * g / 450e9
    t16 = fixed_2 + 2 * 15 / 16 * g / (8 * 50e9)
    t16_one_nic = fixed_2 + 2 * 15 / 16 * g / 50e9  # a node with a single 400 Gb/s port
    assert (round(t8 * 1e3), round(t16 * 1e3), round(t16_one_nic * 1e3)) == (63, 75, 602)
    assert f"{t16 / t8:.1f}" == "1.2" and f"{t16_one_nic / t8:.0f}" == "10"
    fixed_8 = (8.4 + (126 - 14) * 3.4 + 14 * 14) * 1e-6  # 64 GPUs on 8 nodes: 2 x 63 steps, 14 across
    assert round((fixed_8 + 2 * 63 / 64 * g / (8 * 50e9)) * 1e3) == 80  # 16 -> 64 GPUs changes little


def test_decode_tp_bound_across_nodes():
    """tensor_parallel-decode-bound: Y > 3 F / (2 B beta), beta = W_hbm / W_link, Llama 3 70B (F = 28,672) on H100
    SXM (3.35 TB/s). A group filling DGX H100 nodes all-reduces at the node's 8 x 50 GB/s; one GPU of the group a
    node, at its own NIC's 50 GB/s."""
    f, hbm = 28672, 3.35e12
    beta_node, beta_nic = hbm / (8 * 50e9), hbm / 50e9
    assert f"{beta_node:.1f}" == "8.4" and f"{beta_nic:.1f}" == "67.0"
    assert [round(3 * f / (2 * b * beta_node)) for b in (8, 32, 256)] == [642, 160, 20]
    assert [round(3 * f / (2 * b * beta_nic)) for b in (8, 32, 256)] == [80, 20, 3]
    assert 3 * f / (2 * 32 * beta_node) > 0.85 * 3 * f / (2 * 32 * hbm / 450e9)  # "hardly below NVLink's" 181
