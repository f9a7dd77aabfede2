"""Numbers the chapter "Why several heads" states, recomputed without its code."""
import mha_kit as mk


def test_tensor_parallel_degrees_for_llama_3_70b():
    """vLLM's LlamaAttention asserts: h % D == 0, and h_kv % D == 0 if h_kv >= D else D % h_kv == 0."""
    cfg = mk.PRESETS["llama-3-70b"]
    assert (cfg.num_heads, cfg.num_kv_heads) == (64, 8)
    legal = []
    for d in range(1, 65):
        if 64 % d:
            continue
        if (8 % d == 0) if d <= 8 else (d % 8 == 0):
            legal.append(d)
    assert legal == [1, 2, 4, 8, 16, 32, 64]
    assert 6 not in legal
