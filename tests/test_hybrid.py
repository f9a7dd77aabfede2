"""mha_kit.hybrid: cache bytes of a sequence under full attention, local/global layouts and hybrids."""
import pytest

import mha_kit as mk

GEMMA2 = mk.MODEL_FACTS["gemma-2-9b"].config  # 42 layers, 8 KV heads of 256
LLAMA = mk.PRESETS["llama-3-8b"]  # 32 layers, 32 heads and 8 KV heads of 128


def test_gemma2_layout_on_its_own_shape():
    per_layer_token = 2 * 8 * 256 * 2  # K and V, 8 KV heads of 256, bf16
    layout = mk.LAYER_LAYOUTS["gemma-2"]
    assert mk.layout_kv_bytes(GEMMA2, 4096, layout) == 42 * per_layer_token * 4096  # within the window: all layers full
    assert mk.layout_kv_bytes(GEMMA2, 8192, layout) == per_layer_token * (21 * 8192 + 21 * 4096)


def test_gemma3_layout_keeps_a_sixth_of_the_layers_growing():
    per_layer_token = 2 * 8 * 256 * 2
    s = 131072
    got = mk.layout_kv_bytes(GEMMA2, s, mk.LAYER_LAYOUTS["gemma-3"])
    assert got == per_layer_token * (7 * s + 35 * 1024)
    assert got < mk.kv_cache_bytes(GEMMA2, s) / 5


def test_linear_state_bytes():
    assert mk.linear_state_bytes(32, 32, 128) == 32 * 32 * (128 * 128 + 128) * 4  # fp32
    assert mk.linear_state_bytes(1, 1, 2, fmt="bf16") == 12


def test_hybrid_with_every_layer_attention_is_the_full_cache():
    for s in (1, 1000, 131072):
        assert mk.hybrid_cache_bytes(LLAMA, s, attention_every=1) == mk.kv_cache_bytes(LLAMA, s)


def test_hybrid_one_attention_layer_in_four():
    s = 131072
    expected = 8 * (2 * 8 * 128 * 2) * s + mk.linear_state_bytes(24, 32, 128)
    assert mk.hybrid_cache_bytes(LLAMA, s, attention_every=4) == expected
    # the state does not grow: two contexts differ only by the attention layers' cache
    grow = mk.hybrid_cache_bytes(LLAMA, 2 * s, 4) - mk.hybrid_cache_bytes(LLAMA, s, 4)
    assert grow == 8 * (2 * 8 * 128 * 2) * s


def test_errors():
    with pytest.raises(ValueError, match=r"^expected an AttentionConfig \(MHA, GQA or MQA\), got Latent"):
        mk.hybrid_cache_bytes(mk.PRESETS["deepseek-v2"], 10, 4)
    with pytest.raises(ValueError, match=r"^expected a LayerLayout \(mk.LAYER_LAYOUTS\[name\]\), got str$"):
        mk.layout_kv_bytes(GEMMA2, 10, "gemma-3")
    with pytest.raises(ValueError, match=r"^context_len must be a positive integer"):
        mk.layout_kv_bytes(GEMMA2, 0, mk.LAYER_LAYOUTS["gemma-3"])
    with pytest.raises(ValueError, match=r"^attention_every must be a positive integer"):
        mk.hybrid_cache_bytes(LLAMA, 10, 0)
