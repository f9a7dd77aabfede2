"""Claims of cross_and_masked_attention recomputed by hand: the weight a pad key gets when it is
filled with 0 instead of minus infinity, position ids under left padding, and the three masks of an
encoder-decoder."""
import math

import numpy as np

import mha_kit as mk


def test_zero_filled_pad_key_takes_more_weight_than_any_real_key():
    real = [-1.0, -2.0, -3.0]
    total = math.exp(0.0) + sum(math.exp(s) for s in real)
    pad_weight = 1.0 / total  # e^0 / sum
    assert round(pad_weight, 3) == 0.644
    assert all(math.exp(s) / total < pad_weight for s in real)
    weights = mk.softmax(np.array(real + [-np.inf]))
    assert weights[-1] == 0.0
    assert math.isclose(weights.sum(), 1.0)


def test_left_padded_position_ids_count_real_tokens_from_zero():
    mask = mk.padding_mask([5, 3, 8], 8, side="left")[:, 0]
    position_ids = np.where(mask, np.cumsum(mask, axis=-1) - 1, 1)
    for row, n_real in zip(position_ids, (5, 3, 8)):
        assert row[8 - n_real:].tolist() == list(range(n_real))
        assert row[:8 - n_real].tolist() == [1] * (8 - n_real)


def test_rope_scores_do_not_move_with_a_common_shift():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 5, 64))
    pos = np.arange(5)
    before = mk.rope(q, pos) @ mk.rope(k, pos).T
    after = mk.rope(q, pos + 3) @ mk.rope(k, pos + 3).T
    np.testing.assert_allclose(before, after, atol=1e-10)


def test_encoder_decoder_mask_shapes_and_visibility():
    src = mk.padding_mask([6, 4], 6)[:, None]  # (B, 1, 1, s)
    tgt = mk.padding_mask([5, 3], 5)[:, None]  # (B, 1, 1, n)
    decoder = tgt & mk.causal_mask(5)
    assert decoder.shape == (2, 1, 5, 5)
    assert decoder[1, 0].sum(axis=1).tolist() == [1, 2, 3, 3, 3]
    cross = np.broadcast_to(src, (2, 1, 5, 6))
    assert cross[1, 0].sum(axis=1).tolist() == [4] * 5  # every query, all 4 real source tokens
    assert not cross[1, 0, 0, 4:].any()  # source padding hidden, and no causal triangle
