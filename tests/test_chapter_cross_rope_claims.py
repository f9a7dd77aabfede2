"""Claims of cross_and_masked_attention (the cross-attention cache) and rope_scaling (the cost of
long-context training), with the products written out."""
import mha_kit as mk


def test_cross_attention_cache_of_transformer_base():
    layers, h_kv, d_h = 6, 8, 64  # Vaswani et al. 2017, base: N = 6, h = 8, d_k = 64
    cfg = mk.MODEL_FACTS["transformer-base"].config
    cross = 2 * layers * 512 * h_kv * d_h * 2  # K and V, 512 source tokens, bf16
    step = 2 * layers * h_kv * d_h * 2
    assert cross == 6 * 2**20 == mk.kv_cache_bytes(cfg, 512)
    assert step == 12 * 2**10 == mk.kv_cache_bytes_per_token(cfg)
    assert 256 * step == 3 * 2**20


def test_attention_cost_of_128k_against_8k():
    llama = mk.MODEL_FACTS["llama-3.1-405b"]
    assert llama.context_length == 131072
    assert (131072 // 8192) ** 2 == 256
