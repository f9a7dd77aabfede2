"""Claims of book/multi_tenant_serving.ipynb's sections mm-limits and voice-scheduling, written out by hand.

Sources of the hand numbers: Qwen2-VL's released preprocessor_config.json (max_pixels 12,845,056) and
transformers' Qwen2VLImageProcessor default (1,003,520), 28-px merged patches (Qwen2-VL sec. 2.1); vLLM
0.34.0 MultiModalBudget._get_max_items and compute_mm_encoder_budget, H100 server defaults (8,192 tokens,
1,024 sequences); Qwen2.5-7B (28 layers, 4 KV heads of 128) and Llama 3 8B (32 layers, 8 KV heads of 128,
8,030,261,248 parameters); H100 SXM 80 GB at 3.35 TB/s; vLLM 0.34.0 CacheConfig's 0.92 default
gpu_memory_utilization without the extensible KV cache; Kyutai's Moshi README (~3-4 text tokens a second).
"""
import pytest

QWEN_KV = 2 * 28 * 4 * 128 * 2  # bytes of bf16 K and V a token, all layers
LLAMA_KV = 2 * 32 * 8 * 128 * 2
LLAMA_PARAMS, HBM, BW = 8_030_261_248, 80e9, 3.35e12


def test_checkpoint_cap_two_images_fill_a_32k_prompt():
    per_item = 12_845_056 // (28 * 28)
    assert per_item == 16_384
    per_prompt = min(3, 32_768 // per_item)  # the limit of 3 cut to what fits max_model_len
    per_batch = max(8_192, per_item) // per_item  # the encoder budget raised to one item
    assert (per_prompt, per_batch) == (2, 1)
    assert per_prompt * per_item == 32_768
    assert per_prompt * per_item * QWEN_KV / 2**30 == pytest.approx(1.75)  # "1.8 GiB"


def test_lowered_max_pixels_three_images_and_a_batch_of_six():
    per_item = 1_003_520 // (28 * 28)
    assert per_item == 1_280
    assert min(3, 32_768 // per_item) == 3 and min(8_192 // per_item, 1_024 * 3) == 6
    assert 3 * per_item == 3_840
    assert round(3 * per_item * QWEN_KV / 2**20) == 210  # "210 MiB"


def test_voice_itl_is_loose_and_memory_binds():
    itl_ms = 1e3 / 4  # playback consumes about 4 text tokens a second
    assert itl_ms == 250
    ctx = 2_000 + 30  # the conversation and the new words
    per_session = ctx * LLAMA_KV
    assert per_session / 2**20 == pytest.approx(253.75)
    sessions = int((HBM - 2 * LLAMA_PARAMS) // per_session)
    assert sessions == 240  # an upper bound: every byte beside the weights
    assert int((0.92 * HBM - 2 * LLAMA_PARAMS) // per_session) == 216  # vLLM 0.34's 92% budget (non-extensible)
    step_1 = (2 * LLAMA_PARAMS + per_session) / BW  # batch 1: weights plus one cache, memory-bound
    assert round(itl_ms / (1e3 * step_1)) == 51
    step_all = (2 * LLAMA_PARAMS + sessions * per_session) / BW  # compute (2 x 8e9 x 240 FLOPs) is under 4 ms
    assert round(1e3 * step_all) == 24
