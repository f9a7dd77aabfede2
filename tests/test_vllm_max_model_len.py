"""mk.vllm_max_model_len against vLLM's _get_and_verify_max_len (vllm/config/model.py): the
multiplication by rope_scaling's factor is skipped for llama3, longrope and su and for Gemma 3,
yarn multiplies original_max_position_embeddings, the tokenizer's model_max_length caps the
config's length first, and LongRoPE defaults to the original length."""
import pytest

import mha_kit as mk


def test_llama31_keeps_its_length_not_eight_times_it():
    llama = mk.MODEL_FACTS["llama-3.1-405b"]  # max_position_embeddings 131,072, llama3 factor 8
    assert mk.vllm_max_model_len(131072, dict(llama.rope_scaling)) == 131072


def test_yarn_multiplies_the_original_length():
    qwen = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}  # Qwen2.5 card
    assert mk.vllm_max_model_len(32768, qwen) == 4 * 32768
    deepseek_v2 = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}
    assert mk.vllm_max_model_len(163840, deepseek_v2) == 40 * 4096 == 163840


def test_linear_and_dynamic_multiply_the_config_length():
    assert mk.vllm_max_model_len(4096, {"rope_type": "linear", "factor": 4.0}) == 16384
    assert mk.vllm_max_model_len(4096, {"rope_type": "dynamic", "factor": 2.0}) == 8192
    assert mk.vllm_max_model_len(4096) == 4096


def test_gemma3_and_su_are_not_scaled_again():
    gemma = {"rope_type": "linear", "factor": 8.0}
    assert mk.vllm_max_model_len(131072, gemma, model_type="gemma3_text") == 131072
    assert mk.vllm_max_model_len(131072, {"type": "su", "factor": 32.0}) == 131072


def test_longrope_defaults_to_the_original_length():
    phi35 = {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}
    assert mk.vllm_max_model_len(131072, phi35, original_max_position_embeddings=4096) == 4096
    assert mk.vllm_max_model_len(131072, phi35) == 131072  # no original length: the derived one


def test_tokenizer_caps_before_the_factor():
    assert mk.vllm_max_model_len(8192, {"rope_type": "linear", "factor": 2.0}, tokenizer_max_length=4096) == 8192
    assert mk.vllm_max_model_len(131072, tokenizer_max_length=32768) == 32768


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="original_max_position_embeddings"):
        mk.vllm_max_model_len(32768, {"type": "yarn", "factor": 4.0})
    with pytest.raises(ValueError, match="max_position_embeddings must be a positive integer"):
        mk.vllm_max_model_len(0)
    with pytest.raises(ValueError, match="rope_scaling must be a dict"):
        mk.vllm_max_model_len(4096, [("factor", 2.0)])
