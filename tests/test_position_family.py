"""Tests for mha_kit.position_family against the primary sources.

T5's buckets: values worked out by hand from transformers' ``T5Attention._relative_position_bucket``
(modeling_t5.py): 32 buckets, max_distance 128; bidirectional halves of 16 with max_exact 8, the
decoder's one direction with max_exact 16. LongRoPE: transformers' ``_compute_longrope_parameters``
(inv_freq = 1 / (factor * base**(2i/r)), attention factor sqrt(1 + ln s / ln L)). Llama 4: the
``no_rope_layers`` rule of ``Llama4TextConfig`` and the temperature of ``Llama4TextAttention``.
Shaw et al. 2018 sec. 3.2: clip(j - i, -k, k).
"""
import math

import numpy as np
import pytest

import mha_kit as mk


# ---------------------------------------------------------------------------------------------
# T5, hand-worked from the reference code
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("offset, bucket", [
    (0, 0),  # the query itself: bucket 0 of the "not after" half
    (-1, 1), (-7, 7),  # exact buckets: distance < max_exact = 16 // 2 = 8
    (-8, 8),  # log(8/8) = 0 -> 8 + 0
    (-11, 8),  # 8 * ln(11/8) / ln(16) = 0.919 -> 8
    (-12, 9),  # 8 * ln(12/8) / ln(16) = 1.170 -> 9
    (-90, 14), (-91, 15),  # 8 * ln(90/8) / ln 16 = 6.98; ln(91/8) -> 7.015
    (-128, 15), (-5000, 15),  # 8 + 8 = 16, capped at 15
    (1, 17), (8, 24), (12, 25), (91, 31), (5000, 31),  # keys after the query: the upper half, + 16
])
def test_t5_bidirectional_buckets_worked_by_hand(offset, bucket):
    assert mk.t5_relative_bucket(np.array([offset]), bidirectional=True)[0] == bucket


@pytest.mark.parametrize("offset, bucket", [
    (0, 0), (5, 0), (1000, 0),  # keys after the query share bucket 0 (masked in a decoder)
    (-15, 15),  # exact: distance < max_exact = 32 // 2 = 16
    (-16, 16), (-18, 16),  # 16 * ln(18/16) / ln(8) = 0.906 -> 16
    (-19, 17),  # 16 * ln(19/16) / ln 8 = 1.32 -> 17
    (-112, 30), (-113, 31),  # 16 * ln 7 / ln 8 = 14.97; 16 * ln(113/16) / ln 8 = 15.04
    (-10_000, 31),
])
def test_t5_decoder_buckets_worked_by_hand(offset, bucket):
    assert mk.t5_relative_bucket(np.array([offset]), bidirectional=False)[0] == bucket


def test_t5_buckets_keep_shape_and_range():
    offsets = np.arange(-300, 300).reshape(3, -1)  # (3, 200)
    for bidirectional in (True, False):
        b = mk.t5_relative_bucket(offsets, bidirectional)
        assert b.shape == offsets.shape and b.dtype == np.int64
        assert b.min() == 0 and b.max() == 31
        # farther never lands in a nearer bucket, on each side
        left = mk.t5_relative_bucket(-np.arange(300), bidirectional)
        assert (np.diff(left) >= 0).all()


def test_t5_bucket_ranges():
    ranges = mk.t5_bucket_ranges(True, max_offset=500)
    assert ranges[8] == (-8, -11) and ranges[15] == (-91, -500) and ranges[31] == (91, 500)
    assert 16 not in ranges  # bucket 16 would be "after the query, distance 0": never used
    assert len(ranges) == 31
    decoder = mk.t5_bucket_ranges(False, max_offset=500)
    assert decoder[0] == (0, 500) and decoder[31] == (-113, -500) and len(decoder) == 32


def test_t5_errors():
    with pytest.raises(ValueError, match="integers"):
        mk.t5_relative_bucket(np.array([1.5]), True)
    with pytest.raises(ValueError, match="max_distance"):
        mk.t5_relative_bucket(np.array([1]), True, num_buckets=32, max_distance=8)
    with pytest.raises(ValueError, match="num_buckets"):
        mk.t5_relative_bucket(np.array([1]), True, num_buckets=0)


# ---------------------------------------------------------------------------------------------
# Shaw et al., learned tables
# ---------------------------------------------------------------------------------------------

def test_shaw_clips_at_k():
    idx = mk.shaw_relative_index(4, 6, max_relative_position=2)
    assert idx.shape == (4, 6)
    assert idx[0].tolist() == [2, 3, 4, 4, 4, 4]  # j - i = 0, 1, 2, 3 (clipped), ...
    assert idx[3].tolist() == [0, 0, 1, 2, 3, 4]  # j - i = -3 (clipped), -2, -1, 0, 1, 2
    assert idx.min() == 0 and idx.max() == 4  # 2k + 1 = 5 embeddings


def test_shaw_errors():
    with pytest.raises(ValueError, match="max_relative_position"):
        mk.shaw_relative_index(3, 3, 0)


def test_learned_table_params():
    assert mk.learned_position_params(1024, 768) == 786_432  # GPT-2 small's wpe: 1024 x 768
    assert mk.learned_position_params(512, 768) == 393_216  # BERT-base's position_embeddings
    with pytest.raises(ValueError, match="max_positions"):
        mk.learned_position_params(0, 768)


# ---------------------------------------------------------------------------------------------
# LongRoPE
# ---------------------------------------------------------------------------------------------

def test_longrope_matches_the_transformers_formula():
    short, long = [1.0, 2.0], [4.0, 8.0]  # r = 4, base 100: base**(2i/r) = 1, 10
    inv_long, factor = mk.longrope_inv_freq(4, 100.0, short, long, 4096, 131072)
    np.testing.assert_allclose(inv_long, [1 / 4, 1 / 80], rtol=1e-15)
    assert factor == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)), rel=1e-15)  # sqrt(17/12)
    inv_short, _ = mk.longrope_inv_freq(4, 100.0, short, long, 4096, 131072, seq_len=4096)
    np.testing.assert_allclose(inv_short, [1.0, 1 / 20], rtol=1e-15)  # at L tokens: the short factors
    inv_next, _ = mk.longrope_inv_freq(4, 100.0, short, long, 4096, 131072, seq_len=4097)
    np.testing.assert_allclose(inv_next, inv_long, rtol=0)


def test_phi35_record():
    cfg = mk.PHI35_MINI_LONGROPE
    assert cfg.head_dim == 3072 // 32 and len(cfg.long_factor) == len(cfg.short_factor) == 48
    assert cfg.long_factor[0] == 1.0800000429153442 and cfg.long_factor[-1] == 64.83999633789062
    assert cfg.short_factor[0] == 1.0 and cfg.short_factor[-1] == 2.8399994373321533
    assert all(a <= b for a, b in zip(cfg.long_factor, cfg.long_factor[1:]))  # slower pairs, larger factors
    _, factor = mk.longrope_inv_freq(cfg.head_dim, cfg.rope_theta, cfg.short_factor, cfg.long_factor,
                                     cfg.original_max_position_embeddings, cfg.max_position_embeddings)
    assert factor == pytest.approx(math.sqrt(17 / 12), rel=1e-15)  # ln 32 / ln 4096 = 5 / 12


def test_longrope_errors():
    with pytest.raises(ValueError, match="long_factor must hold 2"):
        mk.longrope_inv_freq(4, 100.0, [1.0, 1.0], [1.0], 10, 20)
    with pytest.raises(ValueError, match="even"):
        mk.longrope_inv_freq(5, 100.0, [1.0, 1.0], [1.0, 1.0], 10, 20)
    with pytest.raises(ValueError, match="must be below"):
        mk.LongRopeConfig(name="x", title="x", head_dim=4, rope_theta=1e4, original_max_position_embeddings=20,
                          max_position_embeddings=10, short_factor=(1, 1), long_factor=(1, 1), cite="x", source="x")


# ---------------------------------------------------------------------------------------------
# Llama 4 and Gemma 3
# ---------------------------------------------------------------------------------------------

def test_llama4_nope_layers():
    mask = mk.rope_layer_mask(48, 4)
    assert np.flatnonzero(~mask).tolist() == list(range(3, 48, 4))  # layers 3, 7, ..., 47
    assert int((~mask).sum()) == 12
    with pytest.raises(ValueError, match="no_rope_layer_interval"):
        mk.rope_layer_mask(48, 0)


def test_llama4_temperature():
    scale = mk.llama4_attention_scale(np.array([0, 8190, 8191, 3 * 8192 - 1]))
    np.testing.assert_allclose(scale, [1.0, 1.0, 1 + 0.1 * math.log(2), 1 + 0.1 * math.log(4)], rtol=1e-15)
    with pytest.raises(ValueError, match="non-negative integers"):
        mk.llama4_attention_scale(np.array([-1]))


def test_slowest_wavelength():
    assert mk.slowest_wavelength(4, 100.0) == pytest.approx(2 * math.pi * 10, rel=1e-15)  # base**(2/4)
    inv, _ = mk.rope_inv_freq(256, 1e6)
    assert mk.slowest_wavelength(256, 1e6) == pytest.approx(2 * math.pi / inv[-1], rel=1e-12)
    with pytest.raises(ValueError, match="base"):
        mk.slowest_wavelength(4, 1.0)


def test_layouts():
    scout, gemma = mk.ROPE_LAYOUTS["llama-4-scout"], mk.ROPE_LAYOUTS["gemma-3"]
    assert (scout.no_rope_layer_interval, scout.floor_scale, scout.attn_scale) == (4, 8192, 0.1)
    assert scout.attention_chunk_size == 8192  # Llama4TextConfig.attention_chunk_size, the RoPE layers' chunk
    assert gemma.attention_chunk_size is None  # Gemma 3 has sliding windows, not chunks
    assert (gemma.rope_theta, gemma.local_rope_theta, gemma.head_dim) == (1e6, 1e4, 256)
