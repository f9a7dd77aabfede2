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
