"""Claims of three sections: Qwen GQA cache saving (transformer_block-qwen-generations), the H100 compute hierarchy
(gpu_kernels-gpu-architecture) and the distillation temperature argument (weight_quantization-distillation-loss).
Each number is recomputed here from its source, not read from the notebooks."""
import math

import numpy as np

import mha_kit as mk


def test_qwen25_gqa_cache_ratio_and_bytes():
    # Qwen/Qwen2.5-7B config.json: 28 layers, 28 query heads, 4 key-value heads, head_dim 128; bf16 = 2 bytes.
    layers, q_heads, kv_heads, head_dim, bf16 = 28, 28, 4, 128, 2
    gqa = 2 * layers * kv_heads * head_dim * bf16  # K and V
    mha = 2 * layers * q_heads * head_dim * bf16
    assert gqa == 57_344 and mha // gqa == 7
    assert mk.kv_cache_bytes_per_token(mk.MODEL_FACTS["qwen2.5-7b"].config) == gqa


def test_h100_partition_counts():
    # Whitepaper: 132 SMs on H100 SXM5, 4 partitions per SM, 128 FP32 lanes per SM;
    # tuning guide: 64K 32-bit registers and 64 resident warps per SM.
    gpu = mk.GPUS["h100-sxm"]
    assert (gpu.num_sms, gpu.fp32_lanes_per_sm, gpu.registers_per_sm, gpu.max_warps_per_sm) == (132, 128, 65_536, 64)
    assert 132 * 4 == 528 and 128 // 4 == 32 and 65_536 // 4 == 16_384 and 64 // 4 == 16
    assert 132 * 128 == 16_896 and 132 * 64 * 32 == 270_336


def test_soft_target_gradient_scales_as_inverse_t_squared():
    # Hinton et al. 2015 eq. 4: for T large, dC/dz_i ~ (z_i - v_i) / (N T^2) with zero-mean logits.
    v = np.array([2.0, 1.0, 0.0, -1.0, -2.0])
    z = v + np.array([0.1, -0.2, 0.05, 0.1, -0.05])
    n = len(v)

    def grad(t):
        p = np.exp(v / t) / np.exp(v / t).sum()
        q = np.exp(z / t) / np.exp(z / t).sum()
        return (q - p) / t

    t = 100.0
    assert np.allclose(grad(t), (z - v) / (n * t**2), rtol=0.05, atol=1e-9)
    ratio = np.abs(grad(10.0)).max() / np.abs(grad(20.0)).max()
    assert math.isclose(ratio, 4.0, rel_tol=0.05)
