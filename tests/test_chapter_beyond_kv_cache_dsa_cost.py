"""The DSA-cost section of book/beyond_kv_cache.ipynb, recomputed independently."""
import ml_dtypes
import numpy as np


def test_per_pair_counts_and_shares():
    absorbed = 128 * (512 + 64 + 512)  # DeepSeek-V3 MLA: scores over 576, values over 512
    expanded = 128 * (128 + 64 + 128)
    indexer = 64 * (128 + 1)
    assert (absorbed, expanded, indexer) == (139_264, 40_960, 8_256)
    assert round(indexer / absorbed, 3) == 0.059 and round(indexer / expanded, 3) == 0.202
    s, k = 131_072, 2048
    dsa, dense = indexer * s + absorbed * k, absorbed * s
    assert round(dsa / dense, 3) == 0.075
    assert f"{indexer * s / dsa:.0%}" == "79%"
    assert round(2048 * absorbed / (absorbed - indexer)) == 2177
    assert round(2048 * expanded / (expanded - indexer)) == 2565


def _hadamard(n):
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n)


def _per_row(x, fmt):
    amax = np.abs(x).max(axis=-1, keepdims=True)
    if fmt == "int8":
        scale = amax / 127.0
        return np.rint(x / scale) * scale
    scale = amax / 448.0
    return (x / scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) * scale


def test_rotation_helps_int8_not_fp8_on_the_toy():
    rng = np.random.default_rng(7)
    k = rng.normal(size=(256, 128))
    k[:, 5] *= 30.0
    q = rng.normal(size=(4, 128))
    exact = q @ k.T
    h = _hadamard(128)
    rq, rk = q @ h, k @ h
    assert np.allclose(rq @ rk.T, exact)

    def err(qq, kk, fmt):
        return np.linalg.norm(_per_row(qq, fmt) @ _per_row(kk, fmt).T - exact) / np.linalg.norm(exact)

    assert err(rq, rk, "int8") < 0.5 * err(q, k, "int8")
    assert err(rq, rk, "fp8") > 1.8 * err(q, k, "fp8")
    assert round(np.abs(k).max() / np.sqrt((k ** 2).mean()), 1) == 29.2
