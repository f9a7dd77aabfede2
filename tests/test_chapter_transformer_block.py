"""The numbers the chapter "The block around attention" states, recomputed independently
(products written out, a separate small attention stack), never read from the notebook."""
import numpy as np
import pytest

import mha_kit as mk


def _llama_params(v, d, layers, heads, kv_heads, head_dim, d_ff):
    attention = d * heads * head_dim + 2 * d * kv_heads * head_dim + heads * head_dim * d
    return v * d + layers * (attention + 3 * d * d_ff + 2 * d) + d + v * d


def test_untied_head_counts_and_shares():
    head_8b = 128_256 * 4_096
    assert head_8b == 525_336_576  # "525M"
    total_8b = _llama_params(128_256, 4_096, 32, 32, 8, 128, 14_336)
    assert total_8b == 8_030_261_248
    assert f"{100 * head_8b / total_8b:.1f}%" == "6.5%"
    head_405b = 128_256 * 16_384
    total_405b = _llama_params(128_256, 16_384, 126, 128, 8, 128, 53_248)
    assert f"{100 * head_405b / total_405b:.1f}%" == "0.5%"
    assert mk.untied_head_share(mk.MODEL_FACTS["llama-3.1-405b"]) == (head_405b, pytest.approx(head_405b / total_405b))
    assert f"{256_000 * 3_584 / 1e6:,.0f}M" == "918M"  # Gemma 2 9B, tied


def test_swiglu_width_and_deepnorm_and_norm_count():
    hidden = int(2 * 4 * 4096 / 3)  # 10,922
    hidden = int(1.3 * hidden)  # 14,198
    assert 1024 * -(-hidden // 1024) == 14_336 == mk.swiglu_hidden_dim(4096, 1.3, 1024)
    assert f"{2000 ** 0.25:.2f}" == "6.69" and f"{8000 ** -0.25:.3f}" == "0.106"
    assert (2 * 32 + 1, (2 * 32 + 1) * 4096) == (65, 266_240)


def test_dropout_mask_and_parallel_block_numbers():
    assert 32 * 8192 * 8192 / 8 == 256 * 2**20  # one bit per probability: 256 MiB per layer
    falcon = mk.MODEL_FACTS["falcon-7b"].config
    assert (falcon.num_heads, falcon.num_kv_heads, falcon.head_dim, falcon.num_layers) == (71, 1, 64, 32)
    assert (71 + 2 * 1) * 64 == 4_672 and 4_672 + 18_176 == 22_848
    assert (2 * 32, 32) == (64, 32)


def _attention(h, w_q, w_k, w_v):
    s = (h @ w_q) @ (h @ w_k).T / np.sqrt(h.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ (h @ w_v)


def _ln(h):
    return (h - h.mean(axis=1, keepdims=True)) / np.sqrt(h.var(axis=1, keepdims=True) + 1e-5)


def test_rank_collapse_and_pre_norm_growth_on_an_independent_stack():
    rng = np.random.default_rng(2)
    n, d, layers = 16, 64, 48
    x = rng.standard_normal((n, d))
    full = [tuple(rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)) for _ in range(layers)]
    h = x
    for w in full[:4]:
        h = _attention(h, *w)
    assert np.linalg.norm(h - h.mean(axis=0)) / np.linalg.norm(h) < 1e-10  # collapsed within 4 layers
    pre, post = x, x
    for w in full:
        pre, post = pre + _attention(_ln(pre), *w), _ln(post + _attention(post, *w))
    assert np.linalg.norm(pre, axis=1).mean() > 5 * np.linalg.norm(x, axis=1).mean()  # grows with depth
    assert np.allclose(np.linalg.norm(post, axis=1), np.sqrt(d), rtol=1e-4)  # pinned at sqrt(d)


def test_batch_norm_moves_a_request_and_layer_norm_does_not():
    rng = np.random.default_rng(0)
    mine, others = rng.standard_normal((6, 8)), rng.standard_normal((3, 6, 8))
    padded = others.copy()
    padded[:, 2:] = 0.0

    def bn_of_mine(batch):
        flat = batch.reshape(-1, 8)
        return (batch[0] - flat.mean(axis=0)) / np.sqrt(flat.var(axis=0) + 1e-5)

    a, b = np.concatenate([mine[None], others]), np.concatenate([mine[None], padded])
    assert np.abs(bn_of_mine(a) - bn_of_mine(b)).max() > 0.5
    assert np.array_equal(_ln(a[0]), _ln(b[0]))


def test_float32_two_sums_variance_cancels_and_welford_does_not():
    row = (np.random.default_rng(4).standard_normal(4096) + 1000.0).astype(np.float32)
    exact = row.astype(np.float64).var()
    mean32 = row.mean(dtype=np.float32)
    naive = float(np.mean(row * row, dtype=np.float32) - mean32 * mean32)
    assert abs(naive - exact) / exact > 0.01
    _, welford = mk.row_stats_blocked(row, 256)
    assert abs(welford - exact) / exact < 1e-4


def test_llama31_405b_depth_quoted_in_the_deepnorm_paragraph():
    assert mk.MODEL_FACTS["llama-3.1-405b"].config.num_layers == 126  # Llama 3 paper, Table 3


def test_gemma_3_27b_tied_matrix():
    """Gemma 3 27B: 262,208 tokens x width 5,376, one tied matrix of 1.41B parameters."""
    head = 262_208 * 5_376
    assert head == 1_409_630_208
    assert f"{head / 1e9:.2f}B" == "1.41B"
    assert 2 * head > 2.6 * 2**30  # over 2.6 GiB in bf16


def test_flashattention_byte_threshold_keep_rate():
    # flash_api.cpp: threshold = floor(255 * keep); a uniform byte r in 0..255 is kept when r <= threshold
    keep = 0.9
    threshold = int(255 * keep)  # 229.5 rounded down
    assert threshold == 229
    kept = sum(1 for r in range(256) if r <= threshold)
    assert kept == 230 and round(kept / 256, 4) == 0.8984
    assert round(kept / 256 / keep, 4) == 0.9983  # mean of the 1/keep-scaled output, against the input
