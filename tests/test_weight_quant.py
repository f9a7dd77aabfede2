"""mha_kit.weight_quant against hand-worked grids and the papers' formulas (GPTQ, AWQ, SmoothQuant, OCP MX)."""
import numpy as np
import pytest

import mha_kit as mk


def test_symmetric_int4_grid_by_hand():
    # amax 1.4 -> scale 1.4 / 7 = 0.2; 0.3 / 0.2 = 1.5 rounds to even 2; -1.4 -> -7
    w = np.array([[0.3, -1.4, 0.0, 0.5]])
    codes, scale, zero = mk.quantize_weights(w, 4, group_size=None, symmetric=True)
    assert codes.tolist() == [[[2, -7, 0, 2]]]
    assert scale[0, 0, 0] == pytest.approx(0.2) and zero[0, 0, 0] == 0
    assert mk.dequantize_weights(codes, scale, zero, w.shape) == pytest.approx(np.array([[0.4, -1.4, 0.0, 0.4]]))


def test_asymmetric_grid_follows_gptq_quant_py():
    # GPTQ quant.py: xmin = min(x.min, 0), xmax = max(x.max, 0), scale = (xmax - xmin) / maxq, zero = round(-xmin / scale)
    w = np.array([[-0.5, 0.0, 1.0, 2.5]])
    codes, scale, zero = mk.quantize_weights(w, 2, group_size=None, symmetric=False)
    assert scale[0, 0, 0] == pytest.approx(1.0) and zero[0, 0, 0] == 0  # rint(0.5) = 0, ties to even
    assert codes.tolist() == [[[0, 0, 1, 2]]]  # -0.5 / 1 + 0 -> rint(-0.5) = -0 -> clipped to 0; 2.5 -> 2


def test_groups_shape_and_finer_groups_lower_error():
    w = np.random.default_rng(0).normal(size=(8, 256))
    codes, scale, _ = mk.quantize_weights(w, 4, group_size=128)
    assert codes.shape == (8, 2, 128) and scale.shape == (8, 2, 1)
    err = {g: np.abs(mk.fake_quantize(w, 4, g) - w).mean() for g in ("tensor", None, 128, 32)}
    assert err["tensor"] > err[None] > err[128] > err[32]


def test_zero_stays_zero_and_clip_saturates():
    w = np.array([[0.0, 1.0, -0.1, 0.05]])
    assert mk.fake_quantize(w, 8, None)[0, 0] == 0.0
    assert mk.fake_quantize(w, 8, None, clip=0.5)[0, 1] == pytest.approx(0.5)


@pytest.mark.parametrize("kwargs, match", [
    ({"bits": 1}, "bits must be an integer from 2 to 8"),
    ({"bits": 4, "group_size": 3}, "group_size must be"),
    ({"bits": 4, "group_size": None, "clip": 0.0}, "clip must lie in"),
])
def test_quantize_weights_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mk.quantize_weights(np.ones((2, 4)), **kwargs)


def test_quantize_weights_rejects_non_matrix():
    with pytest.raises(ValueError, match="finite \\(d_out, d_in\\) matrix"):
        mk.quantize_weights(np.ones(4), 4)


def test_bits_per_weight_mx_and_nvfp4():
    assert mk.bits_per_weight(4, 32, 8) == 4.25  # OCP MXFP4: an 8-bit E8M0 scale per 32
    assert mk.bits_per_weight(4, 16, 8) == 4.5  # NVFP4: an E4M3 scale per 16
    assert mk.bits_per_weight(4, 128, 16, 16) == 4.25
    assert mk.bits_per_weight(8, 128 * 128, 32) == 8 + 32 / 16384  # DeepSeek-V3's FP8 weight blocks
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        mk.bits_per_weight(4, 0)
    with pytest.raises(ValueError, match="scale_bits and zero_bits must be >= 0"):
        mk.bits_per_weight(4, 16, -1)


def test_e2m1_grid_is_the_ocp_table():
    grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert mk.round_minifloat(grid, "e2m1").tolist() == grid
    assert mk.round_minifloat([0.25, 0.75, 2.5, 5.0, 7.0, -9.0], "e2m1").tolist() == [0.0, 1.0, 2.0, 4.0, 6.0, -6.0]


def test_e4m3_values():
    assert mk.round_minifloat([448.0, 500.0, 2.0**-9, 2.0**-10, 17.0, 19.0], "e4m3").tolist() == \
        [448.0, 448.0, 2.0**-9, 0.0, 16.0, 20.0]
    with pytest.raises(ValueError, match="fmt must be one of"):
        mk.round_minifloat(1.0, "e5m2")


def test_mxfp4_scale_is_power_of_two_and_keeps_block_max():
    x = np.zeros(32)
    x[0], x[1] = 5.0, 0.3  # amax 5 -> scale 2**(2 - 2) = 1; 0.3 -> 0.5
    y = mk.quantize_fp4_blocks(x, "mxfp4")
    assert y[0] == 4.0 and y[1] == 0.5  # 5 rounds to 4 (tie to even mantissa)
    x[0] = 7.9  # amax 7.9 -> 2**(2 - 2) = 1: 7.9 clips to 6 (OCP MX: values above the max saturate)
    assert mk.quantize_fp4_blocks(x, "mxfp4")[0] == 6.0


def test_nvfp4_scale_maps_block_max_to_six():
    x = np.linspace(-1, 3, 16)
    y = mk.quantize_fp4_blocks(x, "nvfp4")
    assert y.max() == pytest.approx(3.0, rel=0.07)  # scale 3 / 6 = 0.5 is exact in E4M3
    with pytest.raises(ValueError, match="multiple of 16"):
        mk.quantize_fp4_blocks(np.ones(8), "nvfp4")
    with pytest.raises(ValueError, match="fmt must be one of"):
        mk.quantize_fp4_blocks(np.ones(32), "fp4")


def test_gptq_beats_rounding_on_the_layer_output():
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(16, 32)), rng.normal(size=(256, 32)) @ rng.normal(size=(32, 32))  # correlated inputs
    q = mk.gptq_quantize(w, x, 3)
    rtn = mk.fake_quantize(w, 3, None, symmetric=False)
    assert np.mean((x @ (q - w).T) ** 2) < 0.8 * np.mean((x @ (rtn - w).T) ** 2)
    with pytest.raises(ValueError, match="damp > 0"):
        mk.gptq_quantize(w, x, 3, damp=0)


def test_gptq_first_column_is_plain_rounding_on_the_row_grid():
    rng = np.random.default_rng(2)
    w, x = rng.normal(size=(4, 8)), rng.normal(size=(64, 8))
    _, scale, zero = mk.quantize_weights(w, 4, None, symmetric=False)
    expected = scale[:, 0, 0] * (np.clip(np.rint(w[:, 0] / scale[:, 0, 0]) + zero[:, 0, 0], 0, 15) - zero[:, 0, 0])
    assert np.allclose(mk.gptq_quantize(w, x, 4)[:, 0], expected)


def test_awq_protects_salient_channels():
    rng = np.random.default_rng(3)
    w, x = rng.normal(size=(32, 128)), rng.normal(size=(256, 128))
    x[:, :2] *= 50  # two salient input channels
    alpha, s, errors = mk.awq_search(w, x, 4, group_size=128)
    assert alpha > 0 and errors.min() < 0.8 * errors[0]  # alpha = 0 is plain rounding
    assert s.shape == (128,) and s[:2].min() > s[2:].max()
    with pytest.raises(ValueError, match="x must be \\(n_tokens, d_in\\)"):
        mk.awq_search(w, x[:, :64], 4)


def test_smoothquant_equation_4():
    s = mk.smoothquant_scales([16.0, 1.0], [1.0, 4.0], alpha=0.5)
    assert s.tolist() == [4.0, 0.5]  # sqrt(16) / 1, sqrt(1) / sqrt(4)
    assert mk.smoothquant_scales([16.0], [2.0], alpha=1.0).tolist() == [16.0]
    with pytest.raises(ValueError, match="alpha must lie in"):
        mk.smoothquant_scales([1.0], [1.0], alpha=2)
    with pytest.raises(ValueError, match="positive vectors"):
        mk.smoothquant_scales([0.0], [1.0])


def test_weight_step_seconds_roofline():
    # 70e9 params at 4 bits over 3.35e12 B/s: 35e9 / 3.35e12 s; 1 token: 140e9 FLOPs / 989e12 is smaller
    assert mk.weight_step_seconds(70 * 10**9, 1, 4, 3.35e12, 989e12) == pytest.approx(35e9 / 3.35e12)
    assert mk.weight_step_seconds(70 * 10**9, 4096, 4, 3.35e12, 989e12) == pytest.approx(2 * 70e9 * 4096 / 989e12)
    with pytest.raises(ValueError, match="tokens must be a positive integer"):
        mk.weight_step_seconds(10, 0, 4, 1.0, 1.0)
    with pytest.raises(ValueError, match="must be positive"):
        mk.weight_step_seconds(10, 1, 4, 0.0, 1.0)
