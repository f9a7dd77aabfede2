"""Sparse patterns, the prefix-LM mask and document windows against their definitions.

Sources: Longformer (Beltagy et al. 2020, sec. 3.1), BigBird (Zaheer et al. 2020, sec. 2; Hugging
Face's block-sparse layout with global first and last blocks), Sparse Transformer (Child et al.
2019, sec. 4.2-4.3), Reformer (Kitaev et al. 2020, sec. 3), LongLoRA (Chen et al. 2024, sec. 3.2),
T5's prefix LM (Raffel et al. 2020, sec. 3.2.1), Hugging Face tokenizers' ``stride``.
"""
import numpy as np
import pytest

import mha_kit as mk

T, F = True, False


def test_longformer_window_by_hand():
    # w = 2: one key on each side and the token itself
    expected = np.array([[T, T, F, F, F],
                         [T, T, T, F, F],
                         [F, T, T, T, F],
                         [F, F, T, T, T],
                         [F, F, F, T, T]])
    np.testing.assert_array_equal(mk.longformer_mask(5, 2), expected)


def test_longformer_interior_row_reads_window_plus_one_and_globals_are_symmetric():
    n, w = 64, 8
    mask = mk.longformer_mask(n, w, global_tokens=[0, 5])
    assert mask[30].sum() == w + 1 + 2  # w/2 each side, itself, and the two global columns
    assert mask[0].all() and mask[:, 0].all() and mask[5].all() and mask[:, 5].all()
    np.testing.assert_array_equal(mask, mask.T)  # bidirectional


def test_longformer_dilation_skips_and_widens():
    mask = mk.longformer_mask(40, 4, dilation=3)
    assert np.flatnonzero(mask[20]).tolist() == [14, 17, 20, 23, 26]  # |i - j| <= 2 * 3, every third


def test_bigbird_blocks_window_global_random():
    nb, b, r = 16, 4, 2
    mask = mk.bigbird_block_mask(nb, b, num_random_blocks=r, seed=3)
    blocks = mask[::b, ::b]  # one entry per block pair
    np.testing.assert_array_equal(mask, np.kron(blocks, np.ones((b, b), dtype=bool)))  # whole blocks
    assert blocks[[0, -1]].all() and blocks[:, [0, -1]].all()  # global first and last blocks
    for q in range(2, nb - 2):  # away from the globals: 3 window + 2 global + r random blocks
        assert blocks[q].sum() == 3 + 2 + r
        assert blocks[q, q - 1:q + 2].all()


def test_bigbird_is_seeded():
    np.testing.assert_array_equal(mk.bigbird_block_mask(12, 2, seed=1), mk.bigbird_block_mask(12, 2, seed=1))
    assert not np.array_equal(mk.bigbird_block_mask(12, 2, seed=1), mk.bigbird_block_mask(12, 2, seed=2))  # seed used


def test_strided_heads_reach_every_earlier_token_in_two_steps():
    n, stride = 36, 6
    local, strided = mk.strided_masks(n, stride)
    two_steps = (local.astype(int) @ strided.astype(int) > 0) | (strided.astype(int) @ local.astype(int) > 0)
    np.testing.assert_array_equal(two_steps | local | strided, mk.causal_mask(n))
    assert local[20].sum() == stride and strided[20].tolist()[:21].count(True) == 4  # 20, 14, 8, 2


def test_lsh_hash_of_negated_vector_is_half_a_circle_away():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 16))
    b = 8
    buckets, flipped = mk.lsh_buckets(x, b, seed=2), mk.lsh_buckets(-x, b, seed=2)
    np.testing.assert_array_equal(flipped, (buckets + b // 2) % b)  # argmax over [xR; -xR]


def test_lsh_mask_is_same_bucket_and_causal():
    buckets = np.array([0, 1, 0, 1])
    expected = np.array([[T, F, F, F], [F, T, F, F], [T, F, T, F], [F, T, F, T]])
    np.testing.assert_array_equal(mk.lsh_bucket_mask(buckets), expected)
    np.testing.assert_array_equal(mk.lsh_bucket_mask(buckets, causal=False), buckets[:, None] == buckets[None])


def test_shifted_sparse_groups():
    plain, shifted = mk.shifted_sparse_masks(8, 4)
    assert plain[3].tolist() == [T, T, T, T, F, F, F, F] and plain[4].tolist() == [F] * 4 + [T, F, F, F]
    assert shifted[5].tolist() == [F, F, T, T, T, T, F, F]  # group 2..5 straddles the boundary at 4
    assert shifted[0].tolist() == [T, F, F, F, F, F, T, T]  # the roll wraps: 6, 7, 0, 1 form a group
    assert plain.sum() == shifted.sum() == 2 * (4 * 5 // 2)


def test_prefix_lm_mask():
    expected = np.array([[T, T, F, F], [T, T, F, F], [T, T, T, F], [T, T, T, T]])
    np.testing.assert_array_equal(mk.prefix_lm_mask(4, 2), expected)
    np.testing.assert_array_equal(mk.prefix_lm_mask(6, 0), mk.causal_mask(6))
    np.testing.assert_array_equal(mk.prefix_lm_mask(6, 1), mk.causal_mask(6))
    assert mk.prefix_lm_mask(6, 6).all()


def test_document_windows_overlap_by_stride_and_cover_the_document():
    windows = mk.document_windows(1000, 510, 128)
    assert windows == [(0, 510), (382, 892), (764, 1000)]  # starts 510 - 128 = 382 apart
    assert mk.document_windows(300, 510, 128) == [(0, 300)]
    assert mk.document_windows(510, 510, 0) == [(0, 510)]
    assert len(mk.document_windows(10_000, 384, 128)) == 1 + -(-(10_000 - 384) // 256)


def test_mask_density():
    assert mk.mask_density(mk.causal_mask(4)) == 10 / 16
    assert mk.mask_density(mk.prefix_lm_mask(4, 4)) == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: mk.longformer_mask(8, 2, global_tokens=[8]), "global_tokens must be positions"),
    (lambda: mk.longformer_mask(8, 0), "window must be a positive integer"),
    (lambda: mk.bigbird_block_mask(4, 2), "must leave room"),
    (lambda: mk.strided_masks(8, 0), "stride must be a positive integer"),
    (lambda: mk.lsh_buckets(np.ones((3, 4)), 3), "num_buckets must be even"),
    (lambda: mk.shifted_sparse_masks(10, 4), "must be a multiple of group_size"),
    (lambda: mk.prefix_lm_mask(4, 5), "prefix_len must be an integer in 0 .. n"),
    (lambda: mk.prefix_lm_mask(4, 1.0), "prefix_len must be an integer"),
    (lambda: mk.document_windows(100, 50, 50), "stride must be an integer in 0 .. max_len - 1"),
    (lambda: mk.mask_density(np.ones((2, 2))), "expected a 2-D boolean mask"),
])
def test_errors_name_the_rule(call, match):
    with pytest.raises(ValueError, match=match):
        call()
