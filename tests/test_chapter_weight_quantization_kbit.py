"""Claims of book/weight_quantization.ipynb, section weight_quantization-kbit-scaling.

Dettmers and Zettlemoyer (ICML 2023, Abstract) give a 30B 8-bit and a 60B 4-bit model as two
models with the same number of bits; the section adds the group-128 scales of a real 4-bit
checkpoint and a small-scale pair. Recomputed here with the products written out.
"""

import mha_kit as mk


def test_paper_pair_holds_the_same_bits():
    assert 30 * 10**9 * 8 == 60 * 10**9 * 4  # total bits of the two models
    assert 30 * 10**9 * 8 // 8 == 30 * 10**9  # 30 GB of weights


def test_group_128_scales_add_a_sixteenth():
    # 4-bit codes plus one fp16 scale and one fp16 zero point per 128 weights
    bits = 4 + (16 + 16) / 128
    assert bits == 4.25
    assert mk.bits_per_weight(4, 128, 16, 16) == bits
    assert bits / 4 == 1 + 1 / 16
    assert 60 * 10**9 * bits / 8 == 31.875e9  # printed as 31.9 GB


def test_small_scale_pair():
    assert 3 * 10**9 * 16 == 12 * 10**9 * 4  # 3B in bf16 and 12B at 4 bits
    assert 3 * 10**9 * 16 // 8 == 6 * 10**9  # 6 GB each
