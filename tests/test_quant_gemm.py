"""mha_kit.quant_gemm and mha_kit.search_decoding against their sources (fix5a)."""
import numpy as np
import pytest

import mha_kit as mk


def test_zero_point_expansion_is_exact():
    rng = np.random.default_rng(0)
    qx, qw = rng.integers(0, 256, (3, 8)), rng.integers(0, 256, (8, 4))
    zx, zw = 7, 130
    t = mk.zero_point_gemm_terms(qx, qw, zx, zw)
    direct = (qx - zx) @ (qw - zw)  # Jacob et al. Eq. (4) before expansion
    assert np.array_equal(t["main"] - zw * t["x_rowsum"] - zx * t["w_colsum"] + t["const"], direct)
    assert t["const"] == 8 * 7 * 130
    with pytest.raises(ValueError, match="equal K"):
        mk.zero_point_gemm_terms(qx, qw.T, zx, zw)


def test_llm_int8_outliers_and_error():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (16, 64))
    x[:, 5] *= 20.0  # one outlier feature
    w = rng.normal(0, 0.1, (64, 32))
    y, out = mk.llm_int8_matmul(x, w)
    assert list(out) == [5]
    assert np.abs(y - x @ w).max() / np.abs(x @ w).max() < 0.02
    with pytest.raises(ValueError, match="threshold"):
        mk.llm_int8_matmul(x, w, threshold=0)


def test_calibration_amax():
    a = np.arange(1, 10001, dtype=float)
    assert mk.calibration_amax(a) == 10000.0
    assert mk.calibration_amax(a, "percentile", 50) == pytest.approx(5000.5)
    with pytest.raises(ValueError, match="method"):
        mk.calibration_amax(a, "kl")
    with pytest.raises(ValueError, match="percentile"):
        mk.calibration_amax(a, "percentile", 0)


def test_mbr_and_contrastive():
    u = np.array([[1.0, 0.9, 0.8], [0.9, 1.0, 0.1], [0.8, 0.1, 1.0]])
    best, exp = mk.mbr_select(u)
    assert best == 0 and exp[0] == pytest.approx(0.85)
    with pytest.raises(ValueError, match="square"):
        mk.mbr_select(np.ones((2, 3)))
    h = np.array([[1.0, 0.0]])
    cand = np.array([[1.0, 0.0], [0.0, 1.0]])  # candidate 0 repeats the context's direction
    assert mk.contrastive_select([0.6, 0.4], cand, h, 0.0)[0] == 0  # greedy
    assert mk.contrastive_select([0.6, 0.4], cand, h, 0.6)[0] == 1  # 0.4*0.6 - 0.6 < 0.4*0.4 - 0
    with pytest.raises(ValueError, match="alpha"):
        mk.contrastive_select([1.0], cand[:1], h, 1.5)


def test_amdahl_longnet_probes():
    assert mk.amdahl_speedup(0.5, 2) == pytest.approx(4 / 3)
    assert mk.amdahl_speedup(0.9, 1e12) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="fraction"):
        mk.amdahl_speedup(1.5, 2)
    # one pair with w = n, r = 1 is dense attention: 2 n^2 d
    assert mk.longnet_attention_flops(1024, 64, [1024], [1]) == 2 * 1024**2 * 64
    assert mk.longnet_attention_flops(1024, 64, [256, 512], [1, 2]) == 2 * 4 * 256**2 * 64 + 2 * 2 * 256**2 * 64
    with pytest.raises(ValueError, match="r | w"):
        mk.longnet_attention_flops(1000, 64, [256], [1])
    assert mk.linear_probe_expected_probes(0.5) == (1.5, 2.5)
    with pytest.raises(ValueError, match="load factor"):
        mk.linear_probe_expected_probes(1.0)
