"""The weight_quantization chapter's claims in the sections on W4A4 rotations, the imatrix, a model that beats
its baseline, MoE and VLM calibration, GPTQ's knobs and reproducibility, recomputed independently."""
import math

import numpy as np

import mha_kit as mk


def test_llama3_70b_gptq_hessians():
    d, d_ff, kv = 8192, 28672, 8 * 128  # Llama 3 70B: hidden, MLP width, 8 KV heads of 128
    f = mk.MODEL_FACTS["llama-3-70b"]
    assert (f.config.d_model, f.intermediate_size, f.config.num_kv_heads * f.config.head_dim) == (d, d_ff, kv)
    down = d_ff * d_ff * 4
    assert down == 3_288_334_336 and down / 2**30 == 3.0625
    layer = 6 * d * d * 4 + down
    assert layer / 2**30 == 4.5625
    weights = (2 * d * d + 2 * d * kv + 3 * d * d_ff) * 2
    assert weights == 1_711_276_032
    assert f"{layer / weights:.1f}" == "2.9"


def test_deepseek_v3_expert_coverage():
    f = mk.MODEL_FACTS["deepseek-v3"]
    assert (f.num_experts, f.experts_per_token, f.config.d_model) == (256, 8, 7168)
    assert 128 * 2048 * 8 // 256 == 8192 > 7168
    assert 512 * 2048 * 8 // 256 == 32768


def test_noise_numbers():
    assert f"{100 * math.sqrt(0.7 * 0.3 / 1000):.1f}" == "1.4"
    assert 2 * 100 * math.sqrt(0.7 * 0.3 / 1000) > 2.0  # a 2-point gain on 1,000 questions is inside 2 SE
    assert math.sqrt(4096) == 64 and 100 / 64 == 1.5625


def test_act_order_helps_a_layer_with_large_channels():
    rng = np.random.default_rng(12)
    w = rng.normal(0, 1, size=(32, 64))
    x = rng.normal(0, 1, size=(256, 64)) @ (rng.normal(0, 1, size=(64, 64)) / 8)
    x[:, rng.choice(64, size=4, replace=False)] *= 8
    h, y = 2 * x.T @ x, x @ w.T
    err = {kw: np.linalg.norm(x @ mk.gptq_hessian_quantize(w, h, 3, 16, act_order=kw)[0].T - y) for kw in (False, True)}
    assert err[True] < err[False]


def test_importance_weighting_lowers_output_error():
    rng = np.random.default_rng(15)
    w = rng.normal(0, 1, size=(64, 256))
    chan = np.exp(rng.normal(0, 1.0, size=256))
    x_cal, x_new = rng.normal(0, 1, size=(128, 256)) * chan, rng.normal(0, 1, size=(512, 256)) * chan
    imp = (x_cal ** 2).mean(axis=0)
    for bits in (3, 4):
        plain = np.linalg.norm(x_new @ (mk.imatrix_quantize(w, None, bits, 32) - w).T)
        weighted = np.linalg.norm(x_new @ (mk.imatrix_quantize(w, imp, bits, 32) - w).T)
        assert weighted < plain
