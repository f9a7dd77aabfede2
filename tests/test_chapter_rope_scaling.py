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


def test_dca_exact_inside_the_chunk_and_for_the_last_local_tokens():
    n, chunk_size, local = 24, 8, 2
    span = chunk_size - local  # a DCA chunk in DualChunkRotaryEmbedding: keys at j mod span
    dist = mk.dca_distances(n, chunk_size=chunk_size, local_size=local)
    for i in range(n):
        for j in range(i + 1):
            if i // span == j // span or i - j <= local:
                assert dist[i, j] == i - j, (i, j)
            assert dist[i, j] <= chunk_size
    assert dist[23, 12] == chunk_size and 23 - 12 == 11  # previous chunk, query past local: clamped
    assert 262_144 - 8_192 == 253_952  # Qwen2.5-1M chunk_size - local_size


def test_qwen3_lengths():
    assert 4 * 32_768 == 131_072  # Qwen3: trained at 32,768, four-fold with YaRN + DCA
    assert 4 * 262_144 == 2**20  # Qwen3-2507: 262,144 native, 1M with DCA + MInference
