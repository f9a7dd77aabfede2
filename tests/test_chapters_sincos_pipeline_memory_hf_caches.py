"""Claims of four sections (why sine and cosine, pipeline-stage activations, transformers' cache classes, engines' memory fractions), recomputed independently of the notebooks.

positions-sin-and-cos; tensor_parallel-pp-activation-memory; serving_operations-hf-cache-classes;
kv_cache_basics-engine-fractions.
"""
import numpy as np

import mha_kit as mk


def test_sines_alone_have_no_offset_matrix():
    p = np.arange(100)[:, None]
    omega = 10000.0 ** (-np.arange(0, 16, 2) / 16)  # (8,)
    both = np.empty((100, 16))
    both[:, 0::2], both[:, 1::2] = np.sin(p * omega), np.cos(p * omega)
    sines = both[:, 0::2]
    for table, bad in ((both, False), (sines, True)):
        M, *_ = np.linalg.lstsq(table[:93], table[7:], rcond=None)
        worst = np.abs(table[:93] @ M - table[7:]).max()
        assert bool(worst > 0.5) == bad
    # sin a = sin(pi - a), different successors
    assert np.isclose(np.sin(0.4), np.sin(np.pi - 0.4)) and abs(np.sin(1.4) - np.sin(np.pi + 0.6)) > 1
    # dot product: offset-only with the pair, not with sines alone
    assert np.isclose(both[30] @ both[20], both[80] @ both[70])
    assert not np.isclose(sines[30] @ sines[20], sines[80] @ sines[70])


def test_layout_permutation_is_absorbed_by_the_weights():
    rng = np.random.default_rng(1)
    x, pe, W = rng.standard_normal((5, 8)), rng.standard_normal((5, 8)), rng.standard_normal((8, 3))
    perm = np.r_[0:8:2, 1:8:2]
    np.testing.assert_allclose((x[:, perm] + pe[:, perm]) @ W[perm], (x + pe) @ W)


def test_slowest_wavelengths_d512():
    paper = 2 * np.pi * 10000.0 ** (510 / 512)
    t2t = 2 * np.pi * 1.0e4
    assert round(paper) == 60611 and round(t2t) == 62832


def test_quantized_cache_llama8b_32k():
    # Llama 3 8B: 32 layers, 8 KV heads, d_h 128 -> 2*32*8*128 = 65,536 elements a token
    per_token = 2 * 32 * 8 * 128
    full = 32768 * per_token * 2
    assert full == 4 * 2**30
    q4 = 127 * per_token * 2 + (32768 - 127) * per_token // 2
    assert 3.9 < full / q4 < 4.0
    q2 = 127 * per_token * 2 + (32768 - 127) * per_token // 4
    assert 7.5 < full / q2 < 8.0
    cfg = mk.MODEL_FACTS["llama-3-8b"].config
    assert mk.kv_cache_bytes(cfg, 32768) == full
    assert mk.residual_window_cache_bytes(32768, per_token, 4) == q4
    assert mk.residual_window_cache_bytes(32768, per_token, 2) == q2


def test_block_activations_llama70b_8192():
    # residual 8192 + q, k, v (64 + 16) * 128 + gate and up 2 * 28672, per token, bf16
    pp = 2 * 8192 * (8192 + 10240 + 57344)
    tp4 = 2 * 8192 * (8192 + 10240 // 4 + 57344 // 4)
    f = mk.MODEL_FACTS["llama-3-70b"]
    assert f.intermediate_size == 28672 and f.config.d_model == 8192
    assert mk.block_activation_bytes(8192, 8192, 10240, 28672) == pp
    assert mk.block_activation_bytes(8192, 8192, 10240, 28672, tp=4) == tp4
    assert round(pp / tp4, 1) == 3.0


def test_engine_fraction_readings():
    hbm, weights, act = 80e9, 2 * 8_030_261_248, 4e9  # H100 80 GB, Llama 3 8B bf16, the assumed peak
    for frac in (0.9, 0.5):
        vllm = frac * hbm - weights - act
        trt = frac * (hbm - weights - act)
        assert trt > vllm
    assert 0.5 * (hbm - weights - act) + weights + act > 0.6 * hbm  # "well over half"
