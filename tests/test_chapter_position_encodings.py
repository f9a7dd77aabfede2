"""The numbers the chapter "Position encodings, the whole family" states, recomputed here.

T5's bucket boundaries are recomputed with a float64 transcription of the reference rule (the
library follows the float32 code); the rest are products written out.
"""
import math

import numpy as np

import mha_kit as mk


def _t5_bucket(offset, bidirectional, buckets=32, max_distance=128):
    bucket = 0
    if bidirectional:
        buckets //= 2
        bucket += buckets if offset > 0 else 0
        distance = abs(offset)
    else:
        distance = max(-offset, 0)
    exact = buckets // 2
    if distance < exact:
        return bucket + distance
    large = exact + int(math.log(distance / exact) / math.log(max_distance / exact) * (buckets - exact))
    return bucket + min(large, buckets - 1)


def test_learned_tables():
    assert 1024 * 768 == 786_432 and 512 * 768 == 393_216 and 512 * 1024 == 524_288
    assert mk.MODEL_FACTS["gpt2"].context_length == 1024


def test_t5_boundaries_stated_in_the_text():
    for bidirectional in (True, False):
        ours = mk.t5_relative_bucket(np.arange(-2000, 2001), bidirectional)
        assert ours.tolist() == [_t5_bucket(o, bidirectional) for o in range(-2000, 2001)]
    enc = {o: _t5_bucket(o, True) for o in range(-300, 301)}
    assert all(enc[-o] == o for o in range(8))  # exact up to 7
    assert enc[-90] == 14 and enc[-91] == 15 and enc[-300] == 15 and enc[91] == 31  # one bucket from 91 on
    dec = {o: _t5_bucket(o, False) for o in range(-300, 301)}
    assert all(dec[-o] == o for o in range(16)) and dec[-112] == 30 and dec[-113] == 31
    assert 16 not in set(enc.values())


def test_embedding_scale_numbers():
    d = mk.PRESETS["transformer-base"].d_model
    assert math.sqrt(d / 2) == 16.0  # |PE| for every position: d/2 pairs of sin^2 + cos^2 = 1
    assert f"{math.sqrt(d):.1f}" == "22.6"  # a unit-norm token times sqrt(d)


def test_phi35_longrope_numbers():
    phi = mk.PHI35_MINI_LONGROPE
    s = 131072 / 4096
    assert s == 32
    assert sum(f > s for f in phi.long_factor) == 28
    assert f"{math.sqrt(1 + math.log(32) / math.log(4096)):.3f}" == "1.190"
    assert f"{phi.long_factor[16]:.1f}" == "24.5" and round(2 * math.pi * 10000 ** (32 / 96)) == 135  # pair 16
    assert max(phi.short_factor) > 1


def test_llama4_and_gemma3_numbers():
    assert [i for i in range(48) if (i + 1) % 4 == 0] == list(range(3, 48, 4))  # 12 NoPE layers
    assert f"{1 + 0.1 * math.log(10_485_760 // 8192 + 1):.2f}" == "1.72"  # a query at 10M tokens
    assert round(2 * math.pi * 10_000 ** (254 / 256)) == 58_470
    assert round(2 * math.pi * 1_000_000 ** (254 / 256)) == 5_640_335


def test_chatglm6b_two_ids_and_head_halves():
    # THUDM/chatglm-6b get_position_ids, written out: indices up to the bos token (<sop>), then the
    # [gMASK] index for <sop> and every later token; block ids 0 in the context, 1, 2, ... from <sop>.
    context_length, mask_position, seq_length = 4, 3, 8  # x1 x2 x3 [gMASK] | <sop> y1 y2 y3
    position = [p if p < context_length else mask_position for p in range(seq_length)]
    block = [0] * context_length + [k + 1 for k in range(seq_length - context_length)]
    pos1, pos2 = mk.glm_position_ids(4, [(3, 3)])
    assert pos1.tolist() == position == [0, 1, 2, 3, 3, 3, 3, 3]
    assert pos2.tolist() == block == [0, 0, 0, 0, 1, 2, 3, 4]
    head_dim = 4096 // 32  # hidden_size // num_attention_heads
    assert (head_dim, 4096 // (32 * 2)) == (128, 64)  # RotaryEmbedding(hidden // (heads * 2)): one half per id
