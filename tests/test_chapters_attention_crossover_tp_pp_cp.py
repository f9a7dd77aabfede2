"""The numbers of the sections on attention's exact cost and crossover, tensor-parallel gathers, 2D weight-stationary
sharding, mixed pipeline batches and context parallelism, recomputed with the products written out."""
import math

import mha_kit as mk

H100 = mk.GPUS["h100-sxm"]


def test_attention_cost_exact_count_and_attention_only_crossover():
    n, d = 8192, 128
    products = n * n * d + n * n * (d - 1) + n * d * n + n * d * (n - 1)  # QK^T and PV, mults and adds
    rest = n * n + n * (n - 1) + n * n + n * n + n * (n - 1) + n * n  # scale, max, subtract, exp, sum, divide
    assert round(products / rest) == 85
    ridge = H100.bf16_flops / H100.hbm_bandwidth  # 989.4 TFLOP/s over 3.35 TB/s
    assert round(ridge) == 295
    s_star = math.floor(2 * ridge) + 1  # prefill, MHA, bf16: I = S / 2
    assert s_star == 591 and s_star / 2 > ridge and (s_star - 1) / 2 <= ridge
    # decode with groups of 8 at 128K: 2 h S / (2 (h + S h_kv)), h = 64, h_kv = 8
    assert f"{2 * 64 * 131072 / (2 * (64 + 131072 * 8)):.1f}" == "8.0"


def test_tensor_parallel_gather_ratio_and_decode_bound():
    f, d = 28672, 8192  # Llama 3 70B
    assert f / (2 * 32) == 448  # gather / all-reduce bytes at batch 32
    gather = 7 * (f // 8) * d * 2  # bf16 bytes, 7/8 of the weight
    shard = f * d // 8 * 2
    assert 40 < (gather / 450e9) / (shard / 3.35e12) < 60  # "tens of times" the local read
    beta_nv, beta_ib = 3.35e12 / 450e9, 3.35e12 / 50e9
    assert f"{beta_nv:.1f}" == "7.4" and f"{beta_ib:.1f}" == "67.0"
    assert round(3 * f / (2 * 32 * beta_nv)) == 181
    assert round(3 * f / (2 * 32 * beta_ib)) == 20
    assert f"{3 * f / (2 * 256 * beta_ib):.0f}" == "3"


def test_two_d_weight_stationary_first_wins_at_16_chips():
    b, dm, ff = 64, 8192, 4 * 8192

    def two_d(n, x):
        yz = n // x
        return 2 * (yz - 1) / yz * b * dm / x + 2 * (x - 1) / x * b * ff / yz

    for n, wins in ((4, False), (8, False), (16, True)):
        one = 2 * (n - 1) / n * b * dm
        best = min(two_d(n, x) for x in range(1, n + 1) if n % x == 0)
        assert (best < one) is wins


def test_pipeline_mixed_against_equal_batches():
    # 4 stages, per-stage costs [8, 1, 1, 1, 8, 1, 1, 1]: each stage starts a micro-batch once it is
    # free and the stage before has finished it
    done = [0.0] * 4
    for c in [8, 1, 1, 1, 8, 1, 1, 1]:
        for s in range(4):
            done[s] = max(done[s], done[s - 1] if s else 0.0) + c
    assert done[-1] == 46  # 22 of work on the last stage plus 3 x 8 waiting for the prefills
    assert f"{1 - 22 / 46:.0%}" == "52%"
    assert f"{3 / (8 + 3):.0%}" == "27%"  # GPipe, 8 equal micro-batches on 4 stages


def test_context_parallel_pass_q_threshold_and_rails_and_trays():
    assert f"{2 * 8 / 128:.1%}" == "12.5%"  # Llama 3.1 405B: h = 128, h_kv = 8
    assert f"{7 / 8:.1%}" == "87.5%"  # off-rail share of cross-node destinations, 8 GPUs a node
    assert 72 // 4 == 18 and -(-64 // 4) == 16  # NVL72 trays; EP64 spans 16 of them
