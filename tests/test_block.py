"""mha_kit.block against its primary sources: the norms' formulas, DeepNet's Table 1, the Llama
reference FeedForward width, Press and Wolf's tying count, Welford/Chan's parallel variance."""
import numpy as np
import pytest

import mha_kit as mk


def test_layer_norm_is_per_row_zero_mean_unit_variance():
    x = np.array([[1.0, 2.0, 3.0, 6.0], [10.0, 10.0, 10.0, 14.0]])
    y = mk.layer_norm(x, eps=0.0)
    assert np.allclose(y.mean(axis=1), 0) and np.allclose(y.var(axis=1), 1)
    # hand-worked first row: mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5
    assert np.allclose(y[0], (x[0] - 3) / np.sqrt(3.5))
    assert np.allclose(mk.layer_norm(x, gamma=2.0, beta=1.0, eps=0.0), 2 * y + 1)


def test_rms_norm_formula_and_equal_to_layer_norm_on_zero_mean_rows():
    x = np.array([3.0, -4.0])  # mean of squares 12.5
    assert np.allclose(mk.rms_norm(x, eps=0.0), x / np.sqrt(12.5))
    z = np.array([[1.0, -1.0, 2.0, -2.0]])
    assert np.allclose(mk.rms_norm(z, eps=0.0), mk.layer_norm(z, eps=0.0))
    assert np.allclose(mk.rms_norm(5 * z, eps=0.0), mk.rms_norm(z, eps=0.0))  # re-scaling invariance


def test_norm_errors():
    with pytest.raises(ValueError, match="last axis"):
        mk.layer_norm(np.float64(1.0))
    with pytest.raises(ValueError, match="last axis"):
        mk.layer_norm(np.zeros((2, 0)))


def test_distance_from_rank_one():
    assert mk.distance_from_rank_one(np.tile([1.0, 2.0, 3.0], (4, 1))) == pytest.approx(0.0)
    assert mk.distance_from_rank_one(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="n >= 2"):
        mk.distance_from_rank_one(np.ones((1, 3)))
    with pytest.raises(ValueError, match="nonzero"):
        mk.distance_from_rank_one(np.zeros((2, 3)))


def test_toy_stack_pure_attention_collapses_and_post_norm_keeps_the_norm():
    rng = np.random.default_rng(0)
    n, d, layers = 8, 16, 6
    x = rng.standard_normal((n, d))
    weights = [tuple(rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)) for _ in range(layers)]
    pure = mk.toy_attention_stack(x, weights, "none")
    assert pure.shape == (layers + 1, n, d)
    assert mk.distance_from_rank_one(pure[-1]) < 1e-6 < mk.distance_from_rank_one(pure[0])
    post = mk.toy_attention_stack(x, weights, "post")
    assert np.allclose(np.linalg.norm(post[1:], axis=2), np.sqrt(d), rtol=1e-4)  # LN output: norm sqrt(d)
    # one layer by hand, pre-norm: h + softmax(q k^T / sqrt d) v on LN(h)
    w_q, w_k, w_v = weights[0]
    h = mk.layer_norm(x)
    s = (h @ w_q) @ (h @ w_k).T / np.sqrt(d)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    assert np.allclose(mk.toy_attention_stack(x, weights[:1], "pre")[1], x + p @ (h @ w_v))
    with pytest.raises(ValueError, match="placement must be one of"):
        mk.toy_attention_stack(x, weights, "sandwich")
    with pytest.raises(ValueError, match=r"\(n, d\)"):
        mk.toy_attention_stack(x[0], weights, "pre")


def test_deepnorm_constants_table_1():
    # DeepNet Table 1, decoder-only: alpha = (2M)^(1/4), beta = (8M)^(-1/4); M = 8: alpha = 2, beta = 1/sqrt(8)
    alpha, beta = mk.deepnorm_constants(8)
    assert alpha == pytest.approx(2.0) and beta == pytest.approx(8 ** -0.5)
    assert mk.deepnorm_constants(8, "encoder") == mk.deepnorm_constants(8)
    with pytest.raises(ValueError, match="encoder-decoder constants differ"):
        mk.deepnorm_constants(8, "encoder-decoder")
    with pytest.raises(ValueError, match="positive integer"):
        mk.deepnorm_constants(0)


def test_swiglu_width_matches_released_llama_shapes():
    assert mk.swiglu_hidden_dim(4096) == 11008  # LLaMA 7B (multiple_of 256)
    assert mk.swiglu_hidden_dim(4096, multiplier=1.3, multiple_of=1024) == 14336  # Llama 3 8B
    assert mk.swiglu_hidden_dim(8192, multiplier=1.3, multiple_of=4096) == 28672  # Llama 3 70B
    assert mk.MODEL_FACTS["llama-3-8b"].intermediate_size == 14336
    with pytest.raises(ValueError, match="d_model must be a positive integer"):
        mk.swiglu_hidden_dim(0)
    with pytest.raises(ValueError, match="multiplier must be None or positive"):
        mk.swiglu_hidden_dim(4096, multiplier=0)


def test_untied_head_share_llama_3_8b():
    head, share = mk.untied_head_share(mk.MODEL_FACTS["llama-3-8b"])
    assert head == 128256 * 4096 == 525_336_576
    assert share == pytest.approx(head / mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"]))
    with pytest.raises(ValueError, match="ModelFacts"):
        mk.untied_head_share("llama-3-8b")
    with pytest.raises(ValueError, match="param_layout"):
        mk.untied_head_share(mk.MODEL_FACTS["gemma-2-9b"])


def test_welford_merge_and_blocked_row_stats():
    a, b = np.array([1.0, 2.0, 4.0]), np.array([7.0, 9.0])
    part = [(len(v), v.mean(), ((v - v.mean()) ** 2).sum()) for v in (a, b)]
    n, mean, m2 = mk.welford_merge(*part)
    both = np.concatenate([a, b])
    assert n == 5 and mean == pytest.approx(both.mean()) and m2 / n == pytest.approx(both.var())
    assert mk.welford_merge((0, 0.0, 0.0), (0, 0.0, 0.0)) == (0, 0.0, 0.0)
    row = np.random.default_rng(3).standard_normal(512) + 100.0
    mean, var = mk.row_stats_blocked(row, 32, dtype=np.float64)
    assert mean == pytest.approx(row.mean()) and var == pytest.approx(row.var())
    with pytest.raises(ValueError, match="power of two"):
        mk.row_stats_blocked(row, 24)
    with pytest.raises(ValueError, match="multiple of threads"):
        mk.row_stats_blocked(row[:100], 64)
    with pytest.raises(ValueError, match="non-negative"):
        mk.welford_merge((-1, 0.0, 0.0), (1, 0.0, 0.0))


def test_block_layouts_name_real_records():
    for name, layout in mk.BLOCK_LAYOUTS.items():
        assert name in mk.MODEL_FACTS
        assert layout["norm"] in ("LayerNorm", "RMSNorm") and layout["placement"] in ("post", "pre", "pre+post")
    assert mk.BLOCK_LAYOUTS["transformer-base"]["placement"] == "post"  # arXiv:1706.03762 sec. 3.1
    assert mk.BLOCK_LAYOUTS["gemma-2-9b"]["tied"] and not mk.BLOCK_LAYOUTS["llama-3-8b"]["tied"]
