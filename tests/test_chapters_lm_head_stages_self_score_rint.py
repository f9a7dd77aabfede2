"""Claims recomputed independently: the LM head against a layer and the balanced pipeline split of Llama 3 8B
(tensor_parallel), RMSNorm making the self-score the row maximum (beyond_kv_cache), numpy's rint rounding ties to
even (weight_quantization)."""
import numpy as np

import mha_kit as mk


def test_llama3_lm_head_weighs_about_two_point_four_small_layers():
    # Llama 3 8B: d 4096, 32 query heads and 8 key-value heads of 128, d_ff 14336, vocabulary 128256 (untied)
    layer = 4096 * 4096 + 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    head = 128256 * 4096
    assert round(head / layer, 2) == 2.41
    # Llama 3 70B: d 8192, 64 + 8 heads of 128, d_ff 28672
    layer70 = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672
    assert round(128256 * 8192 / layer70, 2) == 1.23


def test_balanced_split_of_llama3_8b_beats_the_even_split_by_16_percent():
    r = 128256 * 4096 / (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    even_slowest = 8 + r  # the last of four stages of 8 layers also reads the head
    costs = [1.0] * 31 + [1.0 + r]
    counts = mk.balanced_stages(costs, 4)
    edges = np.cumsum([0, *counts])
    slowest = max(sum(costs[a:b]) for a, b in zip(edges, edges[1:]))
    assert slowest == 9.0  # 34.4 layer-units over 4 stages cannot be split below 9 whole layers
    assert round(even_slowest / slowest - 1, 2) == 0.16


def test_rmsnorm_with_unit_gain_makes_the_self_score_the_row_maximum():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((9, 5))
    x_hat = x / np.sqrt((x**2).mean(axis=-1, keepdims=True))
    s = x_hat @ x_hat.T / np.sqrt(5)
    assert np.allclose(np.diag(s), np.sqrt(5))  # |x_hat|^2 = d, so x_hat.x_hat / sqrt(d) = sqrt(d)
    assert np.all(s <= np.sqrt(5) + 1e-12)  # Cauchy-Schwarz
    assert np.all(np.diag(mk.indegree_topk_mask(s, [1] * 9)))


def test_numpy_rint_rounds_ties_to_even_like_nearbyint():
    assert np.rint([0.5, 1.5, 2.5, -0.5, -2.5, 126.5]).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 126.0]
