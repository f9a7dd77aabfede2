"""FlexAttention's mods and block masks, CUDA-graph sizes, FA4's exp2 and lazy rescaling, INT8 scores."""
import numpy as np
import pytest

import mha_kit as mk


def _causal(head, qi, ki):
    return qi >= ki


def test_block_mask_kinds_by_hand():
    kinds = mk.block_mask_from_mask_mod(_causal, 1, 8, 8, 4)
    np.testing.assert_array_equal(kinds[0], [[mk.PARTIAL, mk.EMPTY], [mk.FULL, mk.PARTIAL]])


def test_block_mask_ragged_edge_counts_only_real_pairs():
    kinds = mk.block_mask_from_mask_mod(lambda h, q, k: np.ones(np.broadcast_shapes(q.shape, k.shape), bool),
                                        1, 5, 6, 4)
    assert (kinds == mk.FULL).all()  # the short last tiles are full, not partial


def test_flex_with_causal_mask_equals_reference_and_skips_tiles():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 2, 20, 8))
    out, tiles = mk.flex_attention(q, k, v, mask_mod=_causal, block_size=8)
    ref, _ = mk.scaled_dot_product_attention(q, k, v, mk.causal_mask(20))
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    assert tiles == 2 * 6  # 3 x 3 tiles per head, 6 on or below the diagonal


def test_flex_softcap_and_alibi_equal_direct_formula():
    rng = np.random.default_rng(1)
    h, n, d_h, cap = 4, 12, 8, 5.0
    q, k, v = rng.normal(size=(3, h, n, d_h)) * 3
    slopes = mk.alibi_slopes(h)

    def mod(score, head, qi, ki):
        return mk.soft_cap(score, cap) - slopes[head] * (qi - ki)

    out, _ = mk.flex_attention(q, k, v, score_mod=mod, mask_mod=_causal, block_size=5)
    scores = mk.soft_cap(q @ np.swapaxes(k, 1, 2) / np.sqrt(d_h), cap) + mk.alibi_bias(h, n)
    ref = mk.masked_softmax(scores, mk.causal_mask(n)) @ v
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


def test_flex_document_mask_equals_separate_documents():
    rng = np.random.default_rng(2)
    docs = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    q, k, v = rng.normal(size=(3, 1, docs.size, 4))
    out, _ = mk.flex_attention(q, k, v, mask_mod=lambda h, qi, ki: (docs[qi] == docs[ki]) & (qi >= ki), block_size=4)
    for d in range(3):
        idx = np.flatnonzero(docs == d)
        alone, _ = mk.scaled_dot_product_attention(q[:, idx], k[:, idx], v[:, idx], mk.causal_mask(idx.size))
        np.testing.assert_allclose(out[:, idx], alone, rtol=0, atol=1e-12)


def test_capture_sizes_and_padding():
    sizes = mk.vllm_capture_sizes(512)
    assert sizes[:5] == [1, 2, 4, 8, 16] and sizes[-3:] == [480, 496, 512]
    assert len(sizes) == 3 + 31 + 17  # [1, 2, 4], 8..248 step 8, 256..512 step 16
    assert mk.padded_batch_size(3, sizes) == 4
    assert mk.padded_batch_size(257, sizes) == 272
    assert mk.padded_batch_size(513, sizes) is None


def test_exp2_poly_matches_power_within_fit_error():
    x = np.linspace(-30, 30, 20001)
    rel = np.abs(mk.exp2_poly(x) / 2.0**x - 1)
    assert rel.max() < 1e-4  # degree 3 on [0, 1): about 9e-5
    assert mk.exp2_poly([0.0, 1.0, -1.0, 3.0]).tolist() == [1.0, 2.0, 0.5, 8.0]  # integers are exact


def test_lazy_rescale_is_exact_and_skips_rescales():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(6, 96)) * 2
    v = rng.normal(size=(96, 4))
    eager, n_eager = mk.lazy_rescale_attention(scores, v, 0.0, 16)
    lazy, n_lazy = mk.lazy_rescale_attention(scores, v, 8.0, 16)
    np.testing.assert_allclose(eager, mk.softmax(scores) @ v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lazy, eager, rtol=0, atol=1e-12)
    assert n_eager > 0 and n_lazy == 0


def test_int8_scores_smoothing_removes_the_offset_error():
    rng = np.random.default_rng(4)
    q = rng.normal(size=(64, 32))
    k = rng.normal(size=(64, 32)) + 20.0 * (np.arange(32) == 3)  # one channel offset by 20 on every token
    exact = q @ k.T
    plain = np.abs(mk.int8_scores(q, k, 16, 16, smooth_k=False) - exact).mean()
    smooth = np.abs(mk.int8_scores(q, k, 16, 16, smooth_k=True) - exact).mean()
    assert smooth < plain / 3


def test_quantize_int8_blocks_scale_is_block_peak():
    x = np.array([[1.0, -2.0], [0.5, 0.0], [4.0, 1.0]])
    codes, scales = mk.quantize_int8_blocks(x, 2)
    np.testing.assert_allclose(scales[:, 0], [2 / 127, 2 / 127, 4 / 127])
    assert codes.tolist() == [[64, -127], [32, 0], [127, 32]]


def test_errors():
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        mk.block_mask_from_mask_mod(_causal, 1, 4, 4, 0)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        mk.padded_batch_size(0, [1, 2])
    with pytest.raises(ValueError, match="max_size must be a positive int"):
        mk.vllm_capture_sizes(0)


def test_backend_rejections_follow_the_read_supports_methods():
    fa, fi = mk.VLLM_BACKEND_FEATURES[("FLASH_ATTN", "hopper")], mk.VLLM_BACKEND_FEATURES[("FLASHINFER", "hopper")]
    assert mk.backend_rejections(fa, 128, 16, fp8_cache=True, sinks=True) == []
    assert mk.backend_rejections(fi, 128, 16, sinks=True) == ["attention sinks not supported"]
    assert mk.backend_rejections(fi, 96, 128) == ["head_size not supported", "block_size not supported"]
    assert mk.backend_rejections(fa, 264, 16) == ["head_size not supported"]  # FA3 stops at 256
    assert mk.VLLM_PRIORITIES["blackwell"][0] == "FLASHINFER" and mk.VLLM_PRIORITIES["hopper"][0] == "FLASH_ATTN"
