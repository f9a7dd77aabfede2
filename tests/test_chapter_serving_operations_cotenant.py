"""Chapter "Serving in production", the long-context co-tenant paragraph of serving_operations-diagnose:
its cache and step numbers recomputed by hand, not read back from the notebook."""
import mha_kit as mk


def test_long_cotenant_cache_and_step():
    # Llama 3 8B: 32 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes = 131,072 bytes a token.
    per_token = 32 * 8 * 128 * 2 * 2
    assert per_token == 131_072 == mk.kv_cache_bytes_per_token(mk.MODEL_FACTS["llama-3-8b"].config)
    assert round(100_000 * per_token / 1e9, 1) == 13.1  # the 100,000-token document's cache, in GB
    # Decode floor = (weights + batch cache) / bandwidth: 64 sequences of 600 tokens against 63 of 600 plus
    # one of 100,000, at the H100 SXM's 3.35 TB/s with 8,030,261,248 bf16 weights.
    weights = 2 * 8_030_261_248
    short = (weights + 64 * 600 * per_token) / 3.35e12
    mixed = (weights + (63 * 600 + 100_000) * per_token) / 3.35e12
    step = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])
    assert abs(step(0, 64, 64 * 600) - short) / short < 0.01
    assert abs(step(0, 64, 63 * 600 + 100_000) - mixed) / mixed < 0.01
    assert round(mixed / short, 1) == 1.6


def test_multimodal_profile_worst_case():
    # vLLM's profiler reserves 16,384 tokens per Qwen2.5-VL image and per video (issue 20123's warning);
    # ten images and a video give the 180,224 of issue 22173.
    assert 10 * 16_384 + 16_384 == 180_224


def test_multimodal_profile_v1_item_count():
    # vLLM 0.34.0, MultiModalBudget._get_max_items: items profiled =
    # max(1, min(budget // T, max_num_seqs * max(1, min(limit, max_model_len // T)))), budget = max(batched, T).
    T, seqs, model_len = 16_384, 256, 32_768

    def items(batched, limit):
        budget = max(batched, T)
        return max(1, min(budget // T, seqs * max(1, min(limit, model_len // T))))

    assert [items(8_192, 1), items(16_384, 1), items(65_536, 1)] == [1, 1, 4]
    assert [items(8_192, 10), items(16_384, 10), items(65_536, 10)] == [1, 1, 4]  # the limit does not bind
    assert items(65_536, 1) * T == 65_536  # four items fill the budget
    for batched in (8_192, 16_384, 65_536):
        for limit in (1, 10):
            assert mk.vllm_mm_profile_items(T, limit, model_len, seqs, batched)[1] == items(batched, limit)
