"""Claims of the feed-forward, ZeRO, training-FLOPs and M-RoPE sections, recomputed independently (products written out).

transformer_block-ffn (the formulas), transformer_block-read-config, tensor_parallel-zero (the one-GPU fine-tune),
cuda_basics-training-flops, positions-rope-decay-bands, positions-mrope, tensor_parallel-colossal-nd,
serving_operations-video-dit, multi_tenant_serving-omni.
"""
import numpy as np
import pytest

import mha_kit as mk


def test_swiglu_width_keeps_the_two_matrix_parameters():
    d = 4096
    width = 2 * 4 * d // 3
    assert width == 10922
    assert abs(3 * d * width - 2 * d * 4 * d) < 3 * d  # equal up to the integer rounding of 8d/3


def test_qwen25_14b_cache_per_token():
    # 2 (K and V) x 48 layers x 8 KV heads x 128 dims x 2 bytes
    assert 2 * 48 * 8 * 128 * 2 == 196_608 == 192 * 1024
    cfg = mk.AttentionConfig(d_model=5120, num_heads=40, num_kv_heads=8, head_dim=128, num_layers=48)
    assert mk.kv_cache_bytes_per_token(cfg) == 196_608
    assert cfg.group_size == 5
    # Qwen-14B (2023), MHA: 2 x 40 x 40 x 128 x 2
    assert 2 * 40 * 40 * 128 * 2 == 819_200 == 800 * 1024


def test_training_memory_of_65b():
    psi = 6_500_000_000
    assert (2 + 2 + 4 + 4 + 4) * psi == 104_000_000_000  # 104 GB of model states
    assert mk.zero_bytes_per_gpu(psi, 8, 3) == 16 * psi / 8 == 13_000_000_000
    assert 2 * psi == 13_000_000_000  # ZeRO-Offload: only the fp16 parameters stay on the GPU
    # activations, LLaMA-7B shape, batch 4 x 2,048 tokens, 32 layers (Korthikanti et al. Eq. 2)
    sbh = 2048 * 4 * 4096
    assert 32 * (34 * sbh + 5 * 32 * 2048 * 2048 * 4) == 32 * mk.activation_bytes_per_layer(2048, 4, 4096, 32)


def test_six_n_d_for_gpt3_and_the_attention_term():
    assert 6 * 175e9 * 300e9 == pytest.approx(3.15e23)
    assert 96 * 2048 * 12288 / 175e9 == pytest.approx(0.0138, abs=1e-3)  # a rounding error at 2K context


def test_rope_long_range_decay_is_in_the_slow_pairs():
    theta = 10_000.0 ** (-np.arange(0, 128, 2) / 128)  # (64,)
    def band(dist, sl):
        w = np.arange(dist, dist + max(1, dist // 2))
        return (2 * np.cos(np.outer(w, theta[sl]))).sum(axis=1).mean()
    assert abs(band(100, slice(0, 32))) < 10  # the fast half has cancelled by 100 tokens
    assert band(100, slice(32, 64)) > 50  # the slow half has barely moved
    assert band(1000, slice(32, 64)) < band(100, slice(32, 64)) / 2  # and carries the fall after that


def test_mrope_positions_advance_with_the_side_not_the_area():
    ids, nxt = mk.mrope_position_ids([("text", 10), ("image", (1, 36, 64)), ("text", 1)])
    assert ids.shape == (3, 10 + 36 * 64 + 1)
    assert nxt == int(ids[0, -1]) + 1
    assert int(ids[0, -1]) == 10 + max(36, 64)  # start 10, width ids up to 10 + 63, next = 74


def test_colossal_table_for_64_gpus():
    assert 2 * 63 / 64 == pytest.approx(1.97, abs=0.01)
    assert 6 * 7 / 8 == pytest.approx(5.25)
    assert 3 * 3 * 5 / 16 == pytest.approx(2.81, abs=0.01)
    assert 6 * 3 / 64 == pytest.approx(0.28, abs=0.01)


def test_wan21_video_tokens_and_flops():
    L = (1 + 80 // 4) * (720 // 16) * (1280 // 16)
    assert L == 21 * 45 * 80 == 75_600
    d = 5120
    weights = 40 * (6 * d * d + 2 * d * 13824)
    linear, attention = 2 * weights * L, 4 * L * L * d * 40
    assert (linear + attention) / 1e15 == pytest.approx(6.5, abs=0.1)
    assert attention / (linear + attention) == pytest.approx(0.72, abs=0.01)
    minutes = (linear + attention) * 100 / (0.5 * mk.GPUS["h100-sxm"].bf16_flops) / 60
    assert 20 < minutes < 25


def test_speech_capacity_bound_by_memory():
    llama8, gpu = mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"]
    free = gpu.hbm_bytes - 2 * mk.model_params(llama8)
    per_stream = 2048 * 2 * 32 * 8 * 128 * 2  # tokens x (K, V) x layers x kv heads x dims x bytes
    assert free // per_stream == free // (2048 * mk.kv_cache_bytes_per_token(llama8.config))
    step = mk.roofline_step(llama8, gpu)
    assert step(0, free // per_stream, (free // per_stream) * 2048) < 0.8 * 0.080  # time is not the binding limit
