"""Claims of kv_cache_calculator's section on real models, recomputed from the shapes
(Llama 2: touvron2023llama2 Table 1 and the Hugging Face configs; Llama 3 70B: the preset)."""
import mha_kit as mk


def test_llama2_7b_at_4k_is_two_gib():
    shape = mk.AttentionConfig(d_model=4096, num_heads=32, num_kv_heads=32, head_dim=128, num_layers=32)
    assert mk.kv_cache_bytes_per_token(shape) == 32 * 2 * 32 * 128 * 2 == 512 * 1024
    assert mk.kv_cache_bytes(shape, 4096) == 2 * 2 ** 30


def test_llama2_70b_batch_32_at_8k_and_llama3_70b_at_128k():
    shape = mk.get_preset("llama-3-70b")  # the attention shape Llama 2 70B shares
    assert mk.kv_cache_bytes_per_token(shape) == 80 * 2 * 8 * 128 * 2 == 320 * 1024
    assert mk.kv_cache_bytes(shape, 8192, 32) == 80 * 2 ** 30
    assert mk.kv_cache_bytes(shape, 131_072) == 40 * 2 ** 30
    assert mk.kv_cache_bytes(shape.with_kv_heads(64), 131_072) == 80 * 2 * 64 * 128 * 2 * 131_072 == 320 * 2 ** 30
