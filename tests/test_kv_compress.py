"""mha_kit.kv_compress against its sources: KIVI's quantizer metadata, xKV's fake_svd."""
import numpy as np
import pytest

import mha_kit as mk


def test_group_quant_bits_minikv_setting():
    # MiniKV README: quant_bits 2, group_size 16; KIVI stores an fp16 scale and an fp16 minimum per group
    assert mk.group_quant_bits(2, 16) == 2 + (16 + 16) / 16 == 4.0
    assert mk.group_quant_bits(2, 128) == 2.25
    assert mk.group_quant_bits(4, 32, zero_point=False) == 4 + 16 / 32


@pytest.mark.parametrize("args, match", [((0, 16), "bits"), ((2, 0), "group_size"),
                                         ((2, 16, 0), "scale_bits"), ((2.0, 16), "bits")])
def test_group_quant_bits_errors(args, match):
    with pytest.raises(ValueError, match=match):
        mk.group_quant_bits(*args)


def test_cross_layer_svd_matches_fake_svd():
    """Layers side by side along the features, truncated SVD, split back: xKV's fake_svd."""
    rng = np.random.default_rng(0)
    g, s, w, r = 3, 40, 8, 5
    caches = rng.normal(size=(g, s, w))
    tokens, per_layer = mk.cross_layer_svd(caches, r)
    assert tokens.shape == (s, r) and per_layer.shape == (g, r, w)
    joined = np.concatenate(list(caches), axis=1)  # (s, G w)
    u, sig, vt = np.linalg.svd(joined, full_matrices=False)
    reference = (u[:, :r] * sig[:r]) @ vt[:r]
    mine = np.concatenate([tokens @ per_layer[i] for i in range(g)], axis=1)
    np.testing.assert_allclose(mine, reference, atol=1e-10)


def test_cross_layer_svd_is_exact_on_a_shared_subspace():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(64, 4))  # tokens in a 4-dim space every layer shares
    caches = np.stack([z @ rng.normal(size=(4, 16)) for _ in range(4)])
    tokens, per_layer = mk.cross_layer_svd(caches, 4)
    np.testing.assert_allclose(np.stack([tokens @ p for p in per_layer]), caches, atol=1e-9)


def test_cross_layer_svd_errors():
    with pytest.raises(ValueError, match="shape"):
        mk.cross_layer_svd(np.zeros((4, 8)), 2)
    with pytest.raises(ValueError, match="rank"):
        mk.cross_layer_svd(np.zeros((2, 4, 3)), 5)


def test_cross_layer_svd_numbers_xkv_readme_setting():
    # README: Llama-3.1-8B, 4 layers a group, rank_k 512; keys are 8 heads x 128 wide per layer
    stored, full = mk.cross_layer_svd_numbers(65536, 4, 1024, 512)
    assert stored == 65536 * 512 + 512 * 4 * 1024
    assert full == 65536 * 4 * 1024
    with pytest.raises(ValueError, match="rank"):
        mk.cross_layer_svd_numbers(100, 1, 64, 65)
    with pytest.raises(ValueError, match="num_tokens"):
        mk.cross_layer_svd_numbers(0, 1, 64, 8)
