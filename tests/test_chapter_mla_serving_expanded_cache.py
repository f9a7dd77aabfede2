"""The expanded-cache section of book/mla_serving.ipynb, recomputed from the configs' numbers."""


def test_expanded_against_latent_and_gqa():
    heads, nope, rope, v, d_c = 128, 128, 64, 128, 512  # DeepSeek-V2 and V3 MLA
    latent = d_c + rope
    expanded = heads * (nope + rope) + heads * v
    assert (latent, expanded) == (576, 40_960)
    assert round(expanded / latent) == 71
    llama70 = 2 * 8 * 128 * 80 * 2  # K and V, 8 KV heads of 128, 80 layers, bf16 bytes per token
    assert llama70 == 320 * 1024
    v3_expanded = expanded * 61 * 2
    assert round(v3_expanded / llama70) == 15
    assert round(v3_expanded / 2**20, 1) == 4.8 and round(expanded * 60 * 2 / 2**20, 1) == 4.7
    assert round(latent * 61 * 2 / 1024, 1) == 68.6 and round(latent * 60 * 2 / 1024, 1) == 67.5
