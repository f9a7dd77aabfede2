"""RULER's effective lengths recomputed from its scores, and vLLM's derived context length.

Sources: RULER (Hsieh et al. 2024, Table 3; the README table of github.com/NVIDIA/RULER, 2024),
whose "Effective Length" column the scores must reproduce; vLLM's ``_get_and_verify_max_len``.
"""
import pytest

import mha_kit as mk
from mha_kit import long_context_eval as lce

K = 1024

# RULER's published "Effective Length" column (">128K" recorded as 128K, the longest length tested)
PUBLISHED_EFFECTIVE = {
    "Gemini-1.5-pro": 128 * K, "GPT-4-1106-preview": 64 * K, "Llama3.1 (70B)": 64 * K, "Qwen2 (72B)": 32 * K,
    "Command-R-plus (104B)": 32 * K, "GLM4 (9B)": 64 * K, "Llama3.1 (8B)": 32 * K,
    "GradientAI/Llama3 (70B)": 16 * K, "Mixtral-8x22B (39B/141B)": 32 * K, "Yi (34B)": 32 * K,
    "Phi3-medium (14B)": 32 * K,
}


@pytest.mark.parametrize("model", sorted(PUBLISHED_EFFECTIVE))
def test_effective_length_reproduces_ruler_table(model):
    assert lce.effective_length(lce.RULER_RESULTS[model].scores) == PUBLISHED_EFFECTIVE[model]


def test_effective_length_stops_at_the_first_failure():
    assert lce.effective_length([90, 80, 90], [1, 2, 3], threshold=85) == 1
    assert lce.effective_length([80, 90], [1, 2], threshold=85) == 0
    assert lce.effective_length([85.6, 90], [1, 2]) == 0  # must exceed, not equal, the threshold


def test_derived_max_model_len_follows_vllm():
    assert lce.derived_max_model_len(32768) == 32768
    # Qwen2.5's YaRN recipe: original 32,768 positions times 4
    yarn = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    assert lce.derived_max_model_len(32768, yarn) == 131072
    assert lce.derived_max_model_len(4096, {"rope_type": "linear", "factor": 2.0}) == 8192
    # Llama 3.1's config already states 131,072 positions: llama3 scaling is not multiplied again
    llama3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}
    assert lce.derived_max_model_len(131072, llama3) == 131072


def test_exports():
    assert mk.effective_length is lce.effective_length and mk.RULER_RESULTS is lce.RULER_RESULTS


@pytest.mark.parametrize("call, match", [
    (lambda: lce.effective_length([90, 90], [1, 2, 3]), "one score per length"),
    (lambda: lce.effective_length([90, 90], [2, 1]), "sorted shortest first"),
    (lambda: lce.derived_max_model_len(0), "max_position_embeddings must be a positive integer"),
    (lambda: lce.derived_max_model_len(10, {"type": "linear", "factor": -1}), "factor must be a positive number"),
    (lambda: lce.RulerResult("x", 4096, (1.0, 2.0)), "expected 6 scores"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
