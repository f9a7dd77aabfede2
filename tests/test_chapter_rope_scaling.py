"""Claims of rope_scaling recomputed by hand: the diluted softmax of the toy head, the pairs that
finish a turn within 8,192 tokens for bases 10,000 and 500,000, and vLLM's default lengths."""
import math

import numpy as np

import mha_kit as mk


def test_dilution_toy_weights():
    rng = np.random.default_rng(0)
    gain = (0.1 * math.log(8.0) + 1.0) ** 2  # YaRN sqrt(1/t) = 0.1 ln s + 1, squared on the score
    assert round(gain, 3) == 1.459
    found = []
    for n_keys, g in ((4096, 1.0), (32768, 1.0), (32768, gain)):
        s = rng.standard_normal(n_keys)
        s[0] = 8.0
        e = np.exp(g * s - g * s.max())
        found.append(round(float(e[0] / e.sum()), 2))
    assert found == [0.31, 0.05, 0.55]


def test_pairs_that_finish_a_turn_within_8k():
    def count(base, r=128, length=8192):
        return sum(2 * math.pi * base ** (2 * i / r) <= length for i in range(r // 2))
    assert count(10000.0) == 50
    assert count(500000.0) == 35
    assert 64 - count(500000.0) == 29  # the slow pairs of the chapter's first cell


def test_vllm_default_lengths():
    assert mk.vllm_max_model_len(131072, {"rope_type": "llama3", "factor": 8.0}) == 131072
    assert mk.vllm_max_model_len(32768, {"type": "yarn", "factor": 4.0,
                                         "original_max_position_embeddings": 32768}) == 4 * 32768
    assert mk.vllm_max_model_len(131072, {"type": "longrope"}, original_max_position_embeddings=4096) == 4096
