"""Claims of book/weight_quantization.ipynb, section weight_quantization-kbit-scaling.

Dettmers and Zettlemoyer (ICML 2023, Abstract) give a 30B 8-bit and a 60B 4-bit model as two
models with the same number of bits; the section adds the group metadata of three 4-bit layouts
(AutoGPTQ's QuantLinear packs `bits`-bit zero points beside fp16 scales), a small-scale pair, the
embedding share of Llama 3.2 1B (config.json shapes), and the compute and KV cost of the larger
model. Recomputed here with the products written out.
"""

import mha_kit as mk


def test_paper_pair_holds_the_same_bits():
    assert 30 * 10**9 * 8 == 60 * 10**9 * 4  # total bits of the two models
    assert 30 * 10**9 * 8 // 8 == 30 * 10**9  # 30 GB of weights


def test_group_128_layouts():
    # 4-bit codes plus, per 128 weights: an fp16 scale; + a 4-bit zero (GPTQ qzeros); + an fp16 zero
    assert mk.bits_per_weight(4, 128, 16) == 4 + 16 / 128 == 4.125
    assert mk.bits_per_weight(4, 128, 16, 4) == 4 + 20 / 128 == 4.15625
    assert mk.bits_per_weight(4, 128, 16, 16) == 4 + 32 / 128 == 4.25
    assert 60 * 10**9 * 4.125 / 8 == 30.9375e9  # printed 30.938, glued 30.9
    assert 60 * 10**9 * 4.15625 / 8 == 31.171875e9  # printed 31.172, glued 31.2
    assert 60 * 10**9 * 4.25 / 8 == 31.875e9  # printed 31.875, glued 31.9
    assert 4.125 / 4 == 1 + 1 / 32 and 4.25 / 4 == 1 + 1 / 16


def test_small_scale_pair():
    assert 3 * 10**9 * 16 == 12 * 10**9 * 4  # 3B in bf16 and 12B at 4 bits
    assert 3 * 10**9 * 16 // 8 == 6 * 10**9  # 6 GB each


def test_llama_3_2_1b_embedding_share():
    embed = 128256 * 2048  # tied embedding / output head
    per_layer = 2048 * 2048 + 2 * 2048 * 512 + 2048 * 2048 + 3 * 2048 * 8192  # q, k, v, o, MLP
    linear = 16 * per_layer
    assert embed == 262_668_288 and linear == 973_078_528
    assert round(embed / (embed + linear), 2) == 0.21  # glued 21%
    all4 = 4 * (linear + embed)
    emb16 = 4 * linear + 16 * embed
    assert round(emb16 / all4, 2) == 1.64  # glued 1.64
    assert round((4 * linear + 8 * embed) / 8 / 1e9, 3) == 0.749


def test_compute_and_kv_of_the_larger_model():
    assert (2 * 60 * 10**9) / (2 * 30 * 10**9) == 2  # one multiply-add per weight per token
    kv_8b = 32 * 2 * 8 * 128 * 2  # layers * (K, V) * KV heads * head_dim * bf16 bytes
    kv_70b = 80 * 2 * 8 * 128 * 2
    assert kv_8b == 131072 and kv_70b == 327680  # 128 and 320 KiB per token
    assert kv_70b / kv_8b == 2.5
    assert mk.kv_cache_bytes_per_token(mk.MODEL_FACTS["llama-3-70b"].config) == kv_70b
