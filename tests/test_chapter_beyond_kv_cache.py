"""Claims of beyond_kv_cache's receptive-field and state-serving sections."""
import numpy as np
import pytest

import mha_kit as mk


@pytest.mark.parametrize("window, layers", [(4, 1), (4, 3), (3, 5)])
def test_stacked_windows_reach_layers_times_window_minus_one(window, layers):
    n = 40
    one = mk.sliding_window_mask(n, window).astype(int)
    reach = np.eye(n, dtype=int)
    for _ in range(layers):
        reach = np.minimum(one @ reach, 1)
    assert reach[-1].sum() == layers * (window - 1) + 1  # the token itself plus L (W - 1) before it


def test_mistral_span():
    facts = mk.MODEL_FACTS["mistral-7b"]
    assert facts.config.num_layers * (facts.sliding_window - 1) == 32 * 4095 == 131_040


def test_mamba_state_per_layer():
    d_inner, n_state, d_conv = 2 * 2560, 16, 4
    assert mk.mamba_state_bytes(2560, 16) == (d_inner * n_state + d_inner * (d_conv - 1)) * 2 == 190 * 1024


def test_reassociation_ratio_is_n_over_d():
    """beyond_kv_cache-linear: scores first 2 n^2 (d + d), state first 4 n d^2: ratio n / d (32 at 4K, 1 at 128)."""
    head = 128
    for n, ratio in ((128, 1), (4096, 32), (131072, 1024)):
        scores_first = 2 * n * n * head + 2 * n * n * head  # phi(Q) phi(K)^T, then the (n, n) matrix times V
        state_first = 2 * head * n * head + 2 * n * head * head  # phi(K)^T V once, then one read per query
        assert scores_first == ratio * state_first
        assert mk.linear_attention_flops(n, head, head, "quadratic") // mk.linear_attention_flops(n, head, head, "linear") == ratio


def test_linear_weights_are_low_rank_and_flat():
    """beyond_kv_cache-linear: rank at most d_phi = 16 of 256, and a far smaller largest weight than softmax's."""
    rng = np.random.default_rng(7)
    q, k = rng.normal(size=(2, 256, 16))
    phi_q, phi_k = mk.elu_feature_map(q), mk.elu_feature_map(k)
    assert np.linalg.matrix_rank(phi_q @ phi_k.T) <= 16 < np.linalg.matrix_rank(np.exp(q @ k.T / 4.0))
    scores = 16 * q @ k.T / 4.0  # inputs four times larger: scores sixteen times larger
    soft = np.exp(scores - scores.max(axis=-1, keepdims=True))
    soft /= soft.sum(axis=-1, keepdims=True)
    lin = mk.elu_feature_map(4 * q) @ mk.elu_feature_map(4 * k).T
    lin /= lin.sum(axis=-1, keepdims=True)
    assert np.median(soft.max(axis=-1)) > 0.9 and np.median(lin.max(axis=-1)) < 0.05


def test_gqa_mla_dsa_three_cuts():
    """beyond_kv_cache-three-cuts: one decoded token at 128K, one layer, bf16 cache.

    Llama 3 70B: 64 query heads, 8 KV heads of 128. DeepSeek-V3: 128 heads, d_c = 512, d_rope = 64,
    d_nope = d_v = 128. DeepSeek-V3.2 code: 64 indexer heads of 128, an FP8 key and one FP32 scale a token,
    top-k 2,048.
    """
    s = 131072
    mha_cache, gqa_cache = 2 * 64 * 128 * 2, 2 * 8 * 128 * 2  # bytes a token and layer
    assert mha_cache // gqa_cache == 8
    llama70 = mk.MODEL_FACTS["llama-3-70b"].config
    assert mk.attention_macs(llama70, s) == 2 * 64 * s * 128  # the same as MHA with 64 heads: no cut
    expanded, latent = 2 * 128 * (128 + 64 + 128), (512 + 64) * 2
    assert f"{expanded / latent:.0f}" == "71"
    naive, absorbed = 128 * s * (128 + 64 + 128), 128 * s * (2 * 512 + 64)  # multiply-adds a step
    assert f"{absorbed / naive:.1f}" == "3.4"
    indexer_key, indexer = 128 + 4, s * 64 * 128
    assert f"{indexer_key / latent:.1%}" == "11.5%"
    assert f"{s * latent / (s * indexer_key + 2048 * latent):.1f}" == "7.7"
    dsa = 128 * 2048 * (2 * 512 + 64) + indexer
    assert f"{absorbed / dsa:.0f}" == "13"
    assert f"{indexer / dsa:.1%}" == "79.0%"
    assert mk.dsa_decode_tokens(s) == (s, 2048)


def test_deepseek_v4_flash_compressed_cache_against_v3_and_v32():
    # V4-Flash config.json: 21 CSA layers (1 entry of 512 + an indexer key of 128 per 4 tokens),
    # 20 HCA layers (1 entry of 512 per 128 tokens), a 128-position window of 512 in all 43 layers; bf16
    n = 2**20
    per_token = 2 * (21 * (512 + 128) / 4 + 20 * 512 / 128)
    assert per_token == 6880
    v3 = 61 * 576 * 2  # MLA latent 512 + rotary key 64, 61 layers
    v32 = v3 + 61 * 128 * 2  # plus DSA's indexer key
    assert (v3, v32) == (70272, 85888)
    v4_total = n * per_token + 43 * 128 * 512 * 2
    assert round(v4_total / (n * v32), 2) == 0.08
    assert round(v3 / per_token) == 10  # "about ten times more slowly than MLA"


def test_chunk_size_balances_at_the_head_width():
    """Yang et al. 2024 sec. 2.2 counted by hand for n = 4,096, d_k = d_v = 128: inside the chunks
    2 n C (d_k + d_v), through the state 4 n d_k d_v; equal at C = d, so the total is twice the state's."""
    n, d = 4096, 128
    state = 4 * n * d * d
    inside = {c: 2 * n * c * (d + d) for c in (16, 128, 512)}
    assert inside[128] == state
    assert (inside[128] + state) / state == 2
    assert inside[512] == 4 * state
    assert (n // 16) * d * d * 2 == 8 * 2**20  # 256 boundary states of 128 x 128 in bf16: 8 MiB
