"""Claims of the round-14 sections tensor_parallel-fsdp-batch, -ddp-buckets, -dp-loss-average and
weight_quantization-awq-scale, recomputed without reading the notebooks."""
import math

import numpy as np

import mha_kit as mk


def test_fsdp16_tp4_numbers():
    alpha = 4.6e14 / (2 * 9e10)
    # F / (Y M_X) + B / (X M_Y) = B F / (N alpha) with F = 53,248, X = 16, Y = 4, M_X = 2, M_Y = 1, N = 64
    b = (53248 / 8) / (53248 / (64 * alpha) - 1 / 16)
    assert round(b) == 25302 and round(b / 64) == 395
    assert round(alpha / 3) == 852  # FSDP alone on three axes, per chip
    assert round(4 * alpha**2 / (2 * 53248)) == 245  # the best split's floor
    assert round(math.sqrt(b * 2 * 64 / 53248), 1) == 7.8  # the communication-minimising X at that batch
    # H100 bf16: inside a node W is one GPU's NVLink 4; across nodes it is the node's egress, 8 NDR ports of
    # 400 Gb/s (Scaling Book Part 12, "Cross-node collectives": B / 400e9 on an H100 SuperPod), not one port
    assert round(989e12 / 450e9) == 2198 and f"{989e12 / (8 * 50e9):,.0f}" == "2,472"
    assert round(989e12 / 50e9) == 19780  # one port per GPU: the count the book no longer uses


def test_bucket_numbers():
    s, n = 6e9, 8
    w = 450e9 * n / (2 * (n - 1))  # ring algorithm bandwidth over NVLink 4
    o = mk.nccl_allreduce_latency_s(8, 1, "ring", "Simple")
    assert round(math.sqrt(s * w * o) / 2**20) == 280
    assert round(2 * math.sqrt(s * o / w) * 1e3, 1) == 2.3
    n25 = round(s / (25 * 2**20))
    assert n25 * o + s / (n25 * w) > 5 * 2 * math.sqrt(s * o / w)  # 25 MiB buckets cost several times the optimum


def test_bucket_numbers_across_16_nodes():
    # 128 GPUs on 16 nodes: the rings' bus bandwidth is the node's egress, 8 x 400 Gb/s = 400 GB/s
    s, n = 6e9, 128
    w = 8 * 50e9 * n / (2 * (n - 1))
    o = mk.nccl_allreduce_latency_s(8, 16, "ring", "Simple")
    assert round(o * 1e6) == 1190
    assert round(math.sqrt(s * w * o) / 2**20) == 1144  # best bucket, MiB
    assert round(2 * math.sqrt(s * o / w) * 1e3, 1) == 11.9  # at best, ms
    n25 = round(s / (25 * 2**20))
    assert round((n25 * o + s / (n25 * w)) * 1e3, 1) == 272.6  # 25 MiB buckets
    assert round((o + s / w) * 1e3, 1) == 31.0  # one bucket


def test_rank_mean_weights():
    lengths = [512, 256, 64, 32]
    # rank mean: a token on rank r weighs 1 / (4 n_r); the global mean gives every token 1 / 864
    weights = [1 / (4 * n) for n in lengths]
    assert weights[3] / weights[0] == 16
    assert sum(n * wt for n, wt in zip(lengths, weights)) == 1.0


def _int3_groups(w):
    # symmetric 3-bit, groups of 128 along the input: step = max|w| / 3 per (row, group)
    g = w.reshape(w.shape[0], -1, 128)
    step = np.abs(g).max(axis=-1, keepdims=True) / 3
    return (np.clip(np.rint(g / step), -3, 3) * step).reshape(w.shape), step


def test_awq_sweep_best_at_two():
    rng = np.random.default_rng(0)
    w = rng.normal(0, 1, size=(64, 256))
    x = rng.normal(0, 1, size=(128, 256))
    sal = rng.choice(256, size=3, replace=False)
    x[:, sal] *= 10.0
    errs, sal_errs, oth_errs = [], [], []
    for s in (1.0, 1.25, 1.5, 2.0, 3.0, 4.0):
        sv = np.ones(256)
        sv[sal] = s
        q, _ = _int3_groups(w * sv)
        e = q / sv - w
        errs.append(np.sqrt(np.mean((x @ e.T) ** 2) / np.mean((x @ w.T) ** 2)))
        m = np.zeros(256, dtype=bool)
        m[sal] = True
        sal_errs.append(np.sqrt(np.mean((x[:, m] @ e[:, m].T) ** 2)))
        oth_errs.append(np.sqrt(np.mean((x[:, ~m] @ e[:, ~m].T) ** 2)))
    assert int(np.argmin(errs)) == 3  # s = 2
    assert all(a > b for a, b in zip(sal_errs, sal_errs[1:]))  # the salient error keeps falling
    assert oth_errs[-1] > 1.5 * oth_errs[0]  # the other channels pay at s = 4
    assert round(errs[0], 3) == 0.270 and round(errs[3], 3) == 0.226 and round(errs[-1], 3) == 0.302
