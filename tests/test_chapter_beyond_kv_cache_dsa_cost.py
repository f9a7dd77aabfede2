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


def test_prefill_against_dense_mha_form():
    # DSA runs in MLA's MQA form only; a dense prefill runs the MHA (expanded) form
    absorbed, expanded, indexer, k = 139_264, 40_960, 8_256, 2048
    ratios = [round((indexer * s + absorbed * k) / (expanded * s), 3) for s in (4096, 32_768, 131_072)]
    assert ratios == [1.902, 0.414, 0.255]
    assert round(k * absorbed / (expanded - indexer)) == 8721
    assert round(2048 * absorbed / (absorbed - indexer)) == 2177  # decode, both in the MQA form


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


def _ue8m0(x):
    amax = np.abs(x).max(axis=-1, keepdims=True)
    scale = 2.0 ** np.ceil(np.log2(amax / 448.0))  # fast_round_scale: next power of two
    return (x / scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) * scale


def test_rotation_over_sixteen_draws():
    h = _hadamard(128)
    ratios = {"fp8": [], "ue8m0": [], "int8": []}
    for seed in range(16):
        rng = np.random.default_rng(seed)
        k = rng.normal(size=(128, 128))
        k[:, 5] *= 30.0
        q = rng.normal(size=(4, 128))
        exact = q @ k.T
        rq, rk = q @ h, k @ h
        assert np.allclose(rq @ rk.T, exact)
        quant = {"fp8": lambda x: _per_row(x, "fp8"), "ue8m0": _ue8m0, "int8": lambda x: _per_row(x, "int8")}
        for name, f in quant.items():
            before = np.linalg.norm(f(q) @ f(k).T - exact)
            after = np.linalg.norm(f(rq) @ f(rk).T - exact)
            ratios[name].append(after / before)
    assert max(ratios["int8"]) < 0.5 and round(float(np.median(ratios["int8"])), 2) == 0.25
    assert round(float(np.median(ratios["fp8"])), 2) == 1.47
    assert round(float(np.median(ratios["ue8m0"])), 2) == 1.04
    assert min(ratios["ue8m0"]) < 1.0 < max(ratios["ue8m0"])  # single draws go either way
