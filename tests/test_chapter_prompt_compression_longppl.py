"""Claims of the prompt-compression, LongPPL and quantized-speculation sections, recomputed by hand (not read back from the notebooks).

long_context_structure-prompt-compression, long_context_structure-perplexity-key-tokens,
speculative_decoding-with-quantization.
"""

import math

import pytest

import mha_kit as mk


def test_gpt2_scorer_parameters_match_the_published_count():
    # 12 layers of 4 d^2 (attention) + 2 d d_ff (MLP), tied 50,257 x 768 head, 1,024 x 768 positions
    d, d_ff, layers, vocab, positions = 768, 3072, 12, 50257, 1024
    matmul = layers * (4 * d * d + 2 * d * d_ff) + vocab * d
    total = matmul + positions * d
    assert matmul == 123_532_032
    # Hugging Face counts 124,439,808 with biases and LayerNorm gains, which the book leaves out
    assert total == pytest.approx(124_439_808, rel=2e-3)
    llama_8b = mk.model_params(mk.MODEL_FACTS["llama-3-8b"])
    assert round(llama_8b / total) == 65


def test_compressed_prompt_cache_shrinks_with_the_ratio():
    # Llama 3 8B: 2 (K and V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes a token
    per_token = 2 * 32 * 8 * 128 * 2
    cfg = mk.MODEL_FACTS["llama-3-8b"].config
    assert mk.kv_cache_bytes(cfg, 8_000) == 8_000 * per_token == 1_048_576_000  # 1,000 MiB
    assert mk.kv_cache_bytes(cfg, 8_000 // 4) * 4 == mk.kv_cache_bytes(cfg, 8_000)
    assert mk.kv_cache_bytes(cfg, 8_000 // 20) * 20 == mk.kv_cache_bytes(cfg, 8_000)


def test_averaged_perplexity_hides_the_key_tokens():
    n, share, base, key_with, key_without = 32_000, 0.02, 2.0, 0.5, 5.0
    n_key = round(n * share)
    with_far = math.exp(((n - n_key) * base + n_key * key_with) / n)
    without_far = math.exp(((n - n_key) * base + n_key * key_without) / n)
    assert with_far == pytest.approx(math.exp(1.97))
    assert without_far / with_far - 1 == pytest.approx(math.exp(0.09) - 1)  # +9%
    assert math.exp(key_without - key_with) == pytest.approx(90.0, rel=1e-3)


def test_quantizing_the_target_raises_the_draft_cost_ratio():
    # batch-1 decode reads every weight once: the step time is proportional to the bits per weight
    bits_w4 = 4 + 16 / 128  # int4 plus one 16-bit scale per group of 128
    assert mk.bits_per_weight(4, 128, 16) == bits_w4
    c_w4 = 0.05 * 16 / bits_w4
    facts, gpu = mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"]
    params = mk.dense_decoder_params(facts)
    t16 = mk.weight_step_seconds(params, 1, 16, gpu.hbm_bandwidth, gpu.bf16_flops)
    t4 = mk.weight_step_seconds(params, 1, bits_w4, gpu.hbm_bandwidth, gpu.bf16_flops)
    assert 0.05 * t16 / t4 == pytest.approx(c_w4)

    def speedup(alpha, k, c):  # Leviathan et al. 2023, Theorem 3.8 and the walltime model
        return (1 - alpha ** (k + 1)) / (1 - alpha) / (k * c + 1)

    assert speedup(0.8, 4, 0.05) == pytest.approx(mk.speculative_speedup(0.8, 4, 0.05))
    assert speedup(0.8, 4, c_w4) == pytest.approx(mk.speculative_speedup(0.8, 4, c_w4))
    assert f"{speedup(0.8, 4, 0.05):.2f}" == "2.80"
    assert f"{speedup(0.8, 4, c_w4):.2f}" == "1.89"
    # speculation still helps the int4 target, and the combination gives the fastest token
    assert t4 / speedup(0.8, 4, c_w4) < t16 / speedup(0.8, 4, 0.05)
    assert max(range(1, 16), key=lambda k: speedup(0.8, k, c_w4)) == 4
    assert max(range(1, 16), key=lambda k: speedup(0.8, k, 0.05)) == 8
