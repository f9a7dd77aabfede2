"""The numbers of four sections (INT against FP grids, two-batch overlap's expert reads, expand against repeat,
matrix units), recomputed without the chapters' code.

weight_quantization-fp4-uniform: INT4 against FP4 on uniform data, in closed form and by explicit grids;
moe_serving-tbo-slower: the expert weights two micro-batches read; follow_up_questions-expand-repeat:
stride-0 views and head order; cuda_basics-cpu-gpu-npu: the matrix units' multiply-accumulates.
"""
import math

import numpy as np
import pytest


def _grid_round(x, levels):
    """Round to the nearest of a symmetric grid given by its non-negative levels (a brute-force search)."""
    grid = np.concatenate([-levels[::-1], levels[1:]])
    return grid[np.abs(x[:, None] - grid[None, :]).argmin(axis=1)]


def _e4m3_levels():
    """Every non-negative finite OCP E4M3 value: subnormals m/8 * 2**-6, normals (1 + m/8) * 2**(e - 7), max 448."""
    subnormal = [m / 8 * 2.0**-6 for m in range(8)]
    normal = [(1 + m / 8) * 2.0 ** (e - 7) for e in range(1, 16) for m in range(8) if not (e == 15 and m == 7)]
    return np.array(sorted(subnormal + normal))


def _qsnr_blocks(x, levels, block=16):
    xb = x.reshape(-1, block)
    scale = np.abs(xb).max(axis=1, keepdims=True) / levels[-1]
    y = np.stack([_grid_round(row / s, levels) * s for row, s in zip(xb, scale[:, 0])])
    return 10 * math.log10(np.sum(x**2) / np.sum((x - y.ravel()) ** 2))


def test_fp4_and_int4_on_uniform_data_closed_form():
    mse_fp4 = ((1 / 12) ** 2 + (2 / 12) ** 2 + (4 / 12) ** 2) / 3 / 12  # three step sizes, a third each
    mse_int4 = (1 / 7) ** 2 / 12
    assert mse_fp4 == pytest.approx(21 / 5184)
    assert mse_int4 == pytest.approx(1 / 588)
    assert f"{10 * math.log10((1 / 3) / mse_fp4):.1f}" == "19.2"
    assert f"{10 * math.log10((1 / 3) / mse_int4):.1f}" == "22.9"
    assert f"{((4 / 12) ** 3 / 12) / mse_fp4:.0%}" == "76%"  # the top step's share: 16/21


def test_int_against_fp_by_distribution_blocks_of_16():
    rng = np.random.default_rng(7)  # the chapter's draws, in its order
    n = 16 * 1024
    dists = {"uniform": rng.uniform(-1, 1, n), "gauss": rng.standard_normal(n), "t3": rng.standard_t(3, n)}
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6.0])
    int4, int8, e4m3 = np.arange(8.0), np.arange(128.0), _e4m3_levels()
    q = {k: {f: _qsnr_blocks(x[:4096], lv) for f, lv in (("int4", int4), ("fp4", e2m1), ("int8", int8), ("fp8", e4m3))}
         for k, x in dists.items()}
    assert q["uniform"]["int4"] > q["uniform"]["fp4"] + 3  # about 24 against 20 dB
    assert q["gauss"]["int4"] > q["gauss"]["fp4"]
    assert q["t3"]["fp4"] > q["t3"]["int4"]
    for k in dists:
        assert q[k]["int8"] > q[k]["fp8"]
    assert q["uniform"]["int8"] - q["uniform"]["fp8"] > 10


def test_two_halves_read_the_experts_again():
    def touched(n, experts=256, k=8):
        return experts * (1 - (1 - k / experts) ** n)

    ratios = {n: 2 * touched(n // 2) / touched(n) for n in (8, 64, 512)}
    assert f"{ratios[8]:.2f}" == "1.06"
    assert f"{ratios[64]:.2f}" == "1.47"
    assert f"{ratios[512]:.2f}" == "2.00"


def test_expand_is_a_stride_zero_view_and_repeat_tiles_in_the_wrong_order():
    k = np.arange(2 * 2 * 3 * 2, dtype=np.float32).reshape(2, 2, 3, 2)  # (b, h_kv, s, d)
    view = np.broadcast_to(k[:, :, None], (2, 2, 4, 3, 2))
    assert view.strides[2] == 0 and np.shares_memory(view, k)
    merged = view.reshape(2, 8, 3, 2)
    assert not np.shares_memory(merged, k)
    assert np.array_equal(merged, np.repeat(k, 4, axis=1))
    heads_interleaved = [int(np.repeat(k, 4, axis=1)[0, i, 0, 0]) // 6 for i in range(8)]
    heads_tiled = [int(np.tile(k, (1, 4, 1, 1))[0, i, 0, 0]) // 6 for i in range(8)]
    assert heads_interleaved == [i // 4 for i in range(8)]  # query head i reads key-value head i // g
    assert heads_tiled == [i % 2 for i in range(8)]


def test_matrix_unit_sizes():
    assert 256 * 256 == 65_536  # TPUv1 (Jouppi et al. 2017, sec. 2)
    assert 16 * 16 * 16 == 4_096  # one Ascend Cube instruction, 16x16 by 16x16 fp16
