"""weight_quantization-integer-only (int32 bias, requantization, fused ReLU), recomputed with the sums written out."""
import numpy as np
import pytest

import mha_kit as mk


@pytest.fixture(scope="module")
def toy():
    # the chapter's layer: seed 17, 8 tokens, 64 inputs after a ReLU, 16 outputs, drawn in this order
    rng = np.random.default_rng(17)
    x = np.maximum(rng.normal(0, 1, size=(8, 64)), 0)
    W = rng.normal(0, 0.1, size=(64, 16))
    b = rng.normal(0, 0.5, size=16)
    y = x @ W + b
    s_x, s_w, s_y = x.max() / 255, np.abs(W).max() / 127, np.maximum(y, 0).max() / 255
    q_x = np.clip(np.round(x / s_x) - 128, -128, 127).astype(np.int64)
    q_w = np.round(W / s_w).astype(np.int64)
    q_b = np.round(b / (s_x * s_w)).astype(np.int64)
    return dict(x=x, W=W, b=b, y=y, s_x=s_x, s_w=s_w, s_y=s_y, q_x=q_x, q_w=q_w, q_b=q_b)


def test_bias_needs_int32_and_beats_an_int8_grid(toy):
    q_b, s_acc, s_y, b = toy["q_b"], toy["s_x"] * toy["s_w"], toy["s_y"], toy["b"]
    assert 127 < np.abs(q_b).max() == 22416 < 2**31 - 1  # Jacob et al. Eq. (11): int32, scale s_x s_w
    err32 = np.abs(q_b * s_acc - b).max()
    assert err32 <= s_acc / 2 + 1e-15  # half of the accumulator's unit
    step8 = np.abs(b).max() / 127
    err8 = np.abs(np.round(b / step8) * step8 - b).max()
    assert round(err32 / s_y, 4) == 0.0020 and round(err8 / s_y, 2) == 0.36


def test_zero_point_term_folds_into_the_bias(toy):
    q_x, q_w, q_b = toy["q_x"], toy["q_w"], toy["q_b"]
    direct = np.einsum("tk,kj->tj", q_x + 128, q_w) + q_b  # sum_k (q_x - z_x) q_w + q_b, z_x = -128
    Q_b = q_b - (-128) * q_w.sum(axis=0)  # Eq. (7)-(8): -z_x a_2 precomputed per output channel
    assert np.array_equal(q_x @ q_w + Q_b, direct)


def test_requantization_matches_float_and_relu_is_the_clamp(toy):
    s_x, s_w, s_y = toy["s_x"], toy["s_w"], toy["s_y"]
    M = s_x * s_w / s_y
    assert 0 < M < 1 and round(M, 6) == 0.004331
    m0, n = mk.quantize_multiplier(M)
    assert n == 7 and 2**30 <= m0 < 2**31 and abs(m0 / 2**31 * 2.0**-7 - M) < 2.0**-38
    acc = toy["q_x"] @ toy["q_w"] + toy["q_b"] + 128 * toy["q_w"].sum(axis=0)
    assert np.abs(acc).max() == 58805
    q_y = mk.requantize(acc, m0, n, -128)
    assert np.array_equal(q_y, np.clip(np.round(acc * M) - 128, -128, 127))  # every code as with M in float
    layer = np.clip(np.round(np.maximum(toy["y"], 0) / s_y) - 128, -128, 127)
    assert np.abs(q_y - layer).max() == 2
    # the ReLU: z_y = qmin, so the saturation sends each negative pre-activation to real 0
    assert (toy["y"] < 0).sum() == 64
    wide = mk.requantize(acc, m0, n, -128, qmin=-(2**31), qmax=127)
    assert wide.min() == -303
    assert np.array_equal(q_y, np.maximum(wide, -128))
    # LiteRT's fused-ReLU floor, max(qmin, z_y + round(0 / s_y)), is qmin itself here
    assert max(-128, -128 + round(0 / s_y)) == -128
