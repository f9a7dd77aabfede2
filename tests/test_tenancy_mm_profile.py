"""mk.vllm_mm_profile_items against vLLM 0.34.0's MultiModalBudget._get_max_items, worked by hand.

vllm/multimodal/encoder_budget.py: per_prompt = max(1, min(limit, max_model_len // per_item));
per_batch = max(1, min(encoder_budget // per_item, max_num_seqs * per_prompt)), with the encoder budget
max(max_num_batched_tokens, per_item) from vllm/v1/core/encoder_cache_manager.py compute_mm_encoder_budget.
"""
import pytest

import mha_kit as mk

QWEN_CAP = 12_845_056 // (28 * 28)  # 16,384 merged patches at the released Qwen2-VL max_pixels
QWEN_1MP = 1_003_520 // (28 * 28)  # 1,280 at the image processor's own default


def test_checkpoint_cap_one_image_per_encoder_batch():
    assert QWEN_CAP == 16_384
    # limit 3 images, 32,768-token context: only two 16,384-token images fit a prompt
    assert mk.vllm_mm_profile_items(QWEN_CAP, 3, 32_768, 256, 8_192) == (2, 1)
    # the encoder budget is raised to one item (16,384), so the profile encodes one image at a time
    assert mk.vllm_mm_profile_items(QWEN_CAP, 3, 8_192, 256, 8_192) == (1, 1)  # never fewer than one


def test_lowered_max_pixels_profiles_a_batch_of_images():
    assert QWEN_1MP == 1_280
    # 8,192 // 1,280 = 6 images per encoder batch; 3 per prompt as the limit says
    assert mk.vllm_mm_profile_items(QWEN_1MP, 3, 32_768, 256, 8_192) == (3, 6)
    # a small max_num_seqs caps the batch at seqs * per_prompt = 1 * 3
    assert mk.vllm_mm_profile_items(QWEN_1MP, 3, 32_768, 1, 8_192) == (3, 3)
    assert mk.vllm_mm_profile_items(QWEN_1MP, 0, 32_768, 256, 8_192) == (0, 0)


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="limit_per_prompt"):
        mk.vllm_mm_profile_items(QWEN_1MP, -1, 32_768, 256, 8_192)
    with pytest.raises(ValueError, match="tokens_per_item"):
        mk.vllm_mm_profile_items(0, 3, 32_768, 256, 8_192)
    with pytest.raises(ValueError, match="max_model_len"):
        mk.vllm_mm_profile_items(QWEN_1MP, 3, 0, 256, 8_192)
