"""The numbers of the sections on evicted tokens against freed blocks, chunked prefill beside a chat, speculation on
mixed traffic, hybrid block counts and prefill's need for every query, recomputed by hand (kv_cache_basics,
tree_attention, continuous_batching, speculative_decoding, serving_kv_cache)."""
import math

import numpy as np
import pytest

import mha_kit as mk


def test_eviction_frees_few_blocks():
    # a 16-slot block is freed only if none of its slots keeps a token: (1 - keep) ** 16 of the blocks
    assert 0.9 ** 16 == pytest.approx(0.185, abs=0.001)  # printed 18.5% freed at 10% kept
    assert (7 / 8) ** 16 == pytest.approx(0.118, abs=0.001)  # printed 11.7% at 12.5% kept (one draw)
    assert 2048 * (0.9 ** 16) ** 8 < 0.01  # 8 heads, each its own 10%: expected blocks freed, printed 0
    assert 32_768 // 16 == 2048 and 4096 // 16 == 256 and math.ceil(3276 / 16) == 205
    # one block of Llama 3 8B: 16 tokens x 32 layers x 2 x 8 heads x 128 x 2 bytes = 2 MiB
    cfg = mk.PRESETS["llama-3-8b"]
    assert mk.kv_cache_bytes(cfg, 16) == 16 * 32 * 2 * 8 * 128 * 2 == 2 * 2 ** 20
    assert (2048 - 256) * 2 * 2 ** 20 == 3.5 * 2 ** 30  # printed 3.5 GiB freed when packed


def test_scattered_eviction_simulation_matches_probability():
    rng = np.random.default_rng(0)
    kept = np.zeros(32_768, bool)
    kept[rng.choice(32_768, 3276, replace=False)] = True
    freed = 1 - kept.reshape(2048, 16).any(axis=1).mean()
    assert freed == pytest.approx(0.9 ** 16, abs=0.03)


def test_chat_behind_document():
    # budget 2,048 with 32 decodes: the document takes 2,016 tokens a step, 9 steps for 16,384
    assert math.ceil(16_384 / (2048 - 32)) == 9
    assert math.ceil(16_384 / 1024) == 16 and math.ceil(16_384 / 512) == 32  # capped
    assert 2048 - 32 - 1024 >= 200  # the chat fits beside a capped chunk
    assert math.ceil(16_384 / (8192 - 32)) == 3 and math.ceil(16_384 / 2048) == 8


def test_mixed_traffic_speedup():
    # i.i.d. acceptance: E[tokens] = (1 - a^(k+1)) / (1 - a); speed-up = E / (1 + k c) at verify cost 1
    def speedup(a, k, c=0.05):
        return (1 - a ** (k + 1)) / (1 - a) / (1 + k * c)

    for a in (0.8, 0.5):
        for k in (2, 4):
            assert mk.speculative_speedup(a, k, 0.05) == pytest.approx(speedup(a, k))
    mixed = 1 / (0.7 / speedup(0.8, 4) + 0.3 / speedup(0.5, 4))
    assert round(speedup(0.8, 4), 2) == 2.80 and round(speedup(0.5, 4), 2) == 1.61 and round(mixed, 2) == 2.30


def test_hybrid_block_counts():
    # vLLM design document: block 16, window 32, 112 tokens -> 7 full blocks, 2 per windowed group
    assert math.ceil(112 / 16) == 7
    assert len({t // 16 for t in range(112 - 32, 112)}) == 2
    # Gemma 2 9B at 8,192 tokens, window 4,096: 512 full blocks, 256 windowed
    assert math.ceil(8192 / 16) == 512
    assert len({t // 16 for t in range(8192 - 4096, 8192)}) == 256
    assert (512 + 256) / 1024 == 0.75  # printed 75%
    per_layer = 16 * 2 * 8 * 256 * 2  # Gemma 2 9B: 8 KV heads of 256, bf16, one layer's 16 tokens
    assert mk.kv_cache_bytes(mk.PRESETS["gemma-2-9b"], 16) == 42 * per_layer


def test_prefill_needs_every_query_below_the_last_layer():
    # two causal attention sublayers with residuals, written out with softmax by hand
    rng = np.random.default_rng(3)
    n, d = 6, 8
    x = rng.standard_normal((n, d))
    layers = [[rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)] for _ in range(2)]

    def sublayer(h, w, noisy):
        q, k, v = h @ w[0], h @ w[1], h @ w[2]
        if noisy:
            q[:-1] = rng.standard_normal(q[:-1].shape)
        s = q @ k.T / np.sqrt(d) + np.triu(np.full((n, n), -np.inf), 1)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        return h + (p / p.sum(axis=1, keepdims=True)) @ v

    clean = sublayer(sublayer(x, layers[0], False), layers[1], False)
    top = sublayer(sublayer(x, layers[0], False), layers[1], True)
    bottom = sublayer(sublayer(x, layers[0], True), layers[1], False)
    assert np.allclose(top[-1], clean[-1])
    assert not np.allclose(bottom[-1], clean[-1])
