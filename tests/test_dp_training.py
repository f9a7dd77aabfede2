"""mha_kit.dp_training against its sources: the Scaling Book's FSDP x TP inequality (Part 5, "Mixed FSDP and
Tensor Parallelism" and Appendix C), the bucketed all-reduce model n_b o + s / (n_b w), and the rank mean."""
import math

import numpy as np
import pytest

import mha_kit as mk

C_V5P, W_ICI = 4.6e14, 2 * 9e10  # TPU v5p bf16 FLOP/s and one ICI axis, both directions (Scaling Book Part 5)


def test_cs336_fsdp16_tp4_xxl():
    # F / (Y M_X) + B / (X M_Y) = B F / (N alpha), F = 53,248, X = 16, Y = 4, M_X = 2, M_Y = 1: solve by hand
    alpha = C_V5P / W_ICI
    b = (53248 / (4 * 2)) / (53248 / (64 * alpha) - 1 / (16 * 1))
    got = mk.fsdp_tp_min_batch(53248, 16, 4, C_V5P, W_ICI, fsdp_axes=2, tp_axes=1)
    assert got == pytest.approx(b, rel=1e-12)
    assert round(got / 64) == 395
    # at that batch the collectives take exactly the matmul time (the Part 5 times, any D)
    d, x, y, n = 16384, 16, 4, 64
    comms = 2 * 2 * d * 53248 / (y * W_ICI * 2) + 2 * 2 * got * d / (x * W_ICI * 1)
    math_t = 2 * 2 * got * d * 53248 / (n * C_V5P)
    assert comms == pytest.approx(math_t, rel=1e-12)


def test_pure_fsdp_is_c_over_w():
    # Part 5: FSDP is compute-bound when B / X > C / W_ici, "4.59e14 / 1.8e11 = 2550" on v5p, / n_axes
    assert mk.fsdp_tp_min_batch(8192, 256, 1, 4.59e14, W_ICI) / 256 == pytest.approx(2550.0)
    assert mk.fsdp_tp_min_batch(8192, 256, 1, 4.59e14, W_ICI, fsdp_axes=3) / 256 == pytest.approx(850.0)


def test_floor_matches_the_book_and_the_optimum():
    # Part 5: F = 32,768, alpha = 2550, M_X M_Y = 2 gives "roughly B/N > 400"
    assert round(mk.fsdp_tp_batch_floor(32768, 2550.0, 1.0, 2, 1)) == 397
    # at B = floor * N and X = sqrt(B M_X N / (F M_Y)) the comms equal the math (Appendix C, zero discriminant)
    f, alpha, mx, my, n = 32768, 2550.0, 2, 1, 64
    b = mk.fsdp_tp_batch_floor(f, alpha, 1.0, mx, my) * n
    x = math.sqrt(b * mx * n / (f * my))
    assert f * x / (n * mx) + b / (x * my) == pytest.approx(b * f / (n * alpha), rel=1e-12)


def test_never_compute_bound_is_inf():
    # F / (N alpha) <= 1 / (X M_Y): the TP term alone outgrows the matmuls
    assert mk.fsdp_tp_min_batch(1024, 2, 64, C_V5P, W_ICI) == math.inf


@pytest.mark.parametrize("kwargs, match", [
    ({"d_ff": 0}, "d_ff must be a positive integer"),
    ({"tp": 2.0}, "tp must be a positive integer"),
    ({"flops": -1.0}, "flops must be a positive number"),
    ({"link_bytes_per_s": 0}, "link_bytes_per_s must be a positive number"),
    ({"fsdp_axes": 0}, "fsdp_axes must be a positive integer"),
])
def test_fsdp_errors(kwargs, match):
    args = {"d_ff": 53248, "fsdp": 16, "tp": 4, "flops": C_V5P, "link_bytes_per_s": W_ICI, **kwargs}
    with pytest.raises(ValueError, match=match):
        mk.fsdp_tp_min_batch(**args)
    with pytest.raises(ValueError, match="tp_axes must be a positive integer"):
        mk.fsdp_tp_batch_floor(53248, C_V5P, W_ICI, 1, -1)


def test_bucket_overhead_by_hand_and_optimum():
    s, w, o = 3e9, 1e11, 50e-6  # 3 GB of gradients, 100 GB/s, 50 us a call
    assert mk.ddp_bucket_overhead(s, w, o, 10) == pytest.approx(10 * 50e-6 + 3e9 / (10 * 1e11))
    best = mk.ddp_optimal_buckets(s, w, o)
    assert best["num_buckets"] == pytest.approx(math.sqrt(3e9 / (1e11 * 50e-6)))
    assert best["bucket_bytes"] * best["num_buckets"] == pytest.approx(s)
    assert best["overhead_s"] == pytest.approx(2 * math.sqrt(s * o / w))
    grid = [mk.ddp_bucket_overhead(s, w, o, n) for n in range(1, 200)]
    assert int(np.argmin(grid)) + 1 in (math.floor(best["num_buckets"]), math.ceil(best["num_buckets"]))
    assert min(grid) >= best["overhead_s"] - 1e-15
    assert mk.ddp_bucket_overhead(s, w, 0, 1) == pytest.approx(s / w)  # no call overhead: one bucket


@pytest.mark.parametrize("args, match", [
    ((0, 1e11, 1e-5, 4), "total_bytes must be a positive number"),
    ((1e9, 1e11, -1e-5, 4), "call_overhead_s must be a number >= 0"),
    ((1e9, 1e11, 1e-5, 0), "num_buckets must be a positive integer"),
])
def test_bucket_errors(args, match):
    with pytest.raises(ValueError, match=match):
        mk.ddp_bucket_overhead(*args)
    with pytest.raises(ValueError, match="call_overhead_s must be a positive number"):
        mk.ddp_optimal_buckets(1e9, 1e11, 0)


def test_rank_mean_by_hand():
    g = np.array([[1.0], [3.0], [10.0]])
    ranks = np.array([0, 0, 1])  # rank 0 holds two tokens, rank 1 one
    assert mk.dp_average_gradient(g, ranks, 2, "rank_mean")[0] == pytest.approx((2.0 + 10.0) / 2)
    assert mk.dp_average_gradient(g, ranks, 2, "global_tokens")[0] == pytest.approx(14.0 / 3)


def test_equal_counts_match_the_serial_batch():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(12, 5))
    serial = g.mean(axis=0)
    equal = np.repeat(np.arange(4), 3)
    for mode in ("rank_mean", "global_tokens"):
        np.testing.assert_allclose(mk.dp_average_gradient(g, equal, 4, mode), serial, rtol=1e-12)
    unequal = np.array([0] * 6 + [1] * 3 + [2, 2] + [3])
    np.testing.assert_allclose(mk.dp_average_gradient(g, unequal, 4, "global_tokens"), serial, rtol=1e-12)
    assert not np.allclose(mk.dp_average_gradient(g, unequal, 4, "rank_mean"), serial)


@pytest.mark.parametrize("g, ranks, n, mode, match", [
    (np.ones((3, 2)), np.array([0, 0, 0]), 2, "rank_mean", "every rank 0..1 must hold at least one token"),
    (np.ones((3, 2)), np.array([0, 1]), 2, "rank_mean", "token_grads must be"),
    (np.ones((2, 2)), np.array([0, 1]), 2, "sum", "normalise must be"),
])
def test_rank_mean_errors(g, ranks, n, mode, match):
    with pytest.raises(ValueError, match=match):
        mk.dp_average_gradient(g, ranks, n, mode)
