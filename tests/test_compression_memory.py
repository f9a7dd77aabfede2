"""mha_kit.compression_memory against its sources: Wanda's per-row score (locuslab/wanda lib/prune.py),
ShortGPT's Block Influence, Korthikanti et al.'s activation formula, sentence-transformers' byte counts."""
import numpy as np
import pytest

import mha_kit as mk


def test_wanda_mask_matches_reference_per_row_sort():
    # the reference: W_metric = |W| * sqrt(scaler_row) (scaler_row = ||X_j||^2 / tokens up to a constant),
    # then, per output row, the int(d_in * sparsity) lowest scores are zeroed
    w = np.array([[1.0, -0.1, 0.5, 2.0], [0.2, 0.3, -4.0, 0.1]])
    norms = np.array([1.0, 100.0, 1.0, 1.0])
    mask = mk.wanda_mask(w, norms, 0.5)
    # row 0 scores 1, 10, 0.5, 2 -> drop columns 2 and 0; row 1 scores 0.2, 30, 4, 0.1 -> drop 3 and 0
    assert mask.tolist() == [[False, True, False, True], [False, True, True, False]]
    assert mask.sum(axis=1).tolist() == [2, 2]  # the same fraction removed from every row
    # with unit norms it is per-row magnitude pruning: column 1's small weight goes in row 0
    assert mk.wanda_mask(w, np.ones(4), 0.5)[0].tolist() == [True, False, False, True]


def test_wanda_mask_zero_sparsity_keeps_all_and_errors():
    assert mk.wanda_mask(np.ones((3, 5)), np.ones(5), 0.0).all()
    with pytest.raises(ValueError, match="sparsity must lie in"):
        mk.wanda_mask(np.ones((2, 2)), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="act_norm"):
        mk.wanda_mask(np.ones((2, 3)), np.ones(2), 0.5)


def test_block_influence_identity_and_orthogonal():
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert mk.block_influence(x, 3 * x) == pytest.approx(0.0)  # same direction: cos = 1
    assert mk.block_influence(x, x[:, ::-1]) == pytest.approx(1.0)  # orthogonal outputs: cos = 0
    with pytest.raises(ValueError, match=r"\(tokens, d\)"):
        mk.block_influence(np.ones((2, 3)), np.ones((3, 2)))


def test_activation_bytes_korthikanti_formula():
    # Korthikanti et al. §4: s*b*h*(34 + 5*a*s/h); GPT-3 175B shape, s = 2048, b = 1, h = 12288, a = 96
    s, b, h, a = 2048, 1, 12288, 96
    assert mk.activation_bytes_per_layer(s, b, h, a) == s * b * h * 34 + 5 * a * s * s * b
    assert mk.activation_bytes_per_layer(s, b, h, a) == round(s * b * h * (34 + 5 * a * s / h))
    assert mk.activation_bytes_per_layer(s, b, h, a, "selective") == 34 * s * b * h
    assert mk.activation_bytes_per_layer(s, b, h, a, "full") == 2 * s * b * h
    with pytest.raises(ValueError, match="recompute must be"):
        mk.activation_bytes_per_layer(s, b, h, a, "partial")
    with pytest.raises(ValueError, match="seq_len must be a positive integer"):
        mk.activation_bytes_per_layer(0, b, h, a)


def test_embedding_index_bytes_and_packbits():
    assert mk.embedding_index_bytes(1000, 1024, "float32") == 1000 * 1024 * 4
    assert mk.embedding_index_bytes(1000, 1024, "int8") == 1000 * 1024
    # binary: one bit per dimension, packed as sentence-transformers does with np.packbits
    emb = np.random.default_rng(0).standard_normal((1000, 1024))
    assert np.packbits(emb > 0).reshape(1000, -1).nbytes == mk.embedding_index_bytes(1000, 1024, "binary") == 128_000
    with pytest.raises(ValueError, match="divisible by 8"):
        mk.embedding_index_bytes(10, 12, "binary")
    with pytest.raises(ValueError, match="precision must be one of"):
        mk.embedding_index_bytes(10, 16, "fp16")
