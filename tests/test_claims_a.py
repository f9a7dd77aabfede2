"""The corrected claims of the first six chapters, recomputed independently (issue 11).

Each test pins a quantity a chapter states in prose and prints with mha_kit: if mha_kit came to
compute it differently (say, a KV cache that grew with the number of query heads), the test fails.
Expected values are written as the products the chapters explain, never read back from the code
under test.
"""
from fractions import Fraction

import numpy as np
import pytest

import mha_kit as mk
from mha_kit import roofline

LLAMA = mk.PRESETS["llama-3-70b"]
V2 = mk.PRESETS["deepseek-v2"]


# ---------------------------------------------------------------------------------------------
# first_principles, why_interviewers_ask: more heads do not cost KV cache
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h", [1, 2, 8, 16, 512])  # one 512-wide head ... 512 heads of one number
def test_cache_per_token_at_fixed_width_does_not_depend_on_heads(h):
    cfg = mk.AttentionConfig(d_model=512, num_heads=h)  # one layer, every head keeps its own K, V
    assert mk.kv_elements_per_token(cfg) == 2 * 512  # 2 * h * d_h = 2 * d
    assert mk.kv_cache_bytes_per_token(cfg, "bf16") == 2 * 512 * 2  # 2,048 bytes in bf16


@pytest.mark.parametrize("h", [8, 16, 32, 64, 128])  # query heads over 8 KV heads of 128
def test_cache_counts_kv_heads_not_query_heads(h):
    cfg = mk.AttentionConfig(d_model=h * 128, num_heads=h, num_kv_heads=8, head_dim=128, num_layers=80)
    assert mk.kv_cache_bytes_per_token(cfg, "bf16") == 80 * 2 * 8 * 128 * 2  # 327,680 bytes


def test_one_wide_head_caches_as_much_as_eight_narrow_heads():
    one = mk.kv_cache_bytes_per_token(mk.AttentionConfig(d_model=512, num_heads=1))
    eight = mk.kv_cache_bytes_per_token(mk.AttentionConfig(d_model=512, num_heads=8))
    assert one == eight == 2048


# ---------------------------------------------------------------------------------------------
# first_principles: what more heads do cost, and W_O's share
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h, scores", [(1, 16_384), (8, 131_072), (512, 8_388_608)])
def test_scores_and_exponentials_grow_with_heads(h, scores):
    cfg = mk.AttentionConfig(d_model=512, num_heads=h)
    assert mk.score_count(cfg, 128) == scores == h * 128 * 128
    assert mk.sequence_attention_macs(cfg, 128) == 2 * 128 * 128 * 512  # 16,777,216 for every h


@pytest.mark.parametrize("h", [1, 8, 64])  # d_h = 64, 8, 1
def test_a_heads_score_table_has_rank_at_most_its_width(h):
    cfg = mk.AttentionConfig(d_model=64, num_heads=h)
    x = np.random.default_rng(1).standard_normal((32, 64))  # n = 32 tokens
    w_q, w_k, _, _ = mk.init_weights(cfg, seed=0)
    q0, k0 = mk.split_heads(x @ w_q, h)[0], mk.split_heads(x @ w_k, h)[0]  # (n, d_h) each
    assert np.linalg.matrix_rank(q0 @ k0.T) == min(32, 64 // h)


@pytest.mark.parametrize("d, h", [(512, 8), (4, 2), (8192, 64), (4096, 32)])
def test_w_o_holds_a_quarter_of_the_projection_parameters(d, h):
    cfg = mk.AttentionConfig(d_model=d, num_heads=h)
    assert mk.projection_params_by_matrix(cfg)["o"] == d * d
    assert Fraction(mk.projection_params_by_matrix(cfg)["o"], mk.projection_params(cfg)) == Fraction(1, 4)


def test_w_o_share_grows_when_kv_heads_are_shared():
    # Llama 3 70B: W_O is 8192^2; the layer is 2 * 8192^2 + 2 * 8192 * 8 * 128
    total = 2 * 8192 * 8192 + 2 * 8192 * 8 * 128
    assert mk.projection_params(LLAMA) == total
    assert Fraction(mk.projection_params_by_matrix(LLAMA)["o"], mk.projection_params(LLAMA)) == Fraction(4, 9)


# ---------------------------------------------------------------------------------------------
# worked_example: sharing key-value heads leaves the attention arithmetic alone
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h_kv", [64, 8, 1])
def test_decode_intensity_is_the_group_size(h_kv):
    cfg = LLAMA.with_kv_heads(h_kv)
    flops = 2 * mk.attention_macs(cfg, 8192)
    assert flops == 2 * 2 * 64 * 8192 * 128  # query heads only
    assert mk.kv_bytes_read(cfg, 8192) == 8192 * 2 * h_kv * 128 * 2
    assert Fraction(flops, mk.kv_bytes_read(cfg, 8192)) == Fraction(64, h_kv)  # g = h / h_kv


# ---------------------------------------------------------------------------------------------
# tradeoffs: DeepSeek-V2's decode intensity against the GPUs' ridge points, and its 2.25 groups
# ---------------------------------------------------------------------------------------------

H100 = (3.35e12, 989e12)  # bytes/s, dense bf16 FLOP/s (datasheet)
H200 = (4.8e12, 989e12)


def test_deepseek_v2_decode_intensity_is_2176_over_9():
    flops = 2 * mk.attention_macs(V2, 8192)
    assert flops == 2 * 128 * 8192 * (2 * 512 + 64)  # absorbed form: scores over d_c + d_rope, mix over d_c
    assert mk.kv_bytes_read(V2, 8192) == 8192 * 576 * 2
    assert Fraction(flops, mk.kv_bytes_read(V2, 8192)) == Fraction(2176, 9)  # 241.8 FLOPs per byte
    assert f"{mk.arithmetic_intensity(V2, 8192):.1f}" == "241.8"


def test_deepseek_v2_decode_is_compute_bound_on_an_h200_not_on_an_h100():
    assert round(roofline.ridge_point(*H200)) == 206
    assert round(roofline.ridge_point(*H100)) == 295
    assert roofline.limited_by(V2, 8192, *H200) == "compute"
    assert roofline.limited_by(V2, 8192, *H100) == "memory"


def test_the_benchmark_mla_stand_in_stays_memory_bound():
    stand_in = roofline.benchmark_variants()["MLA"]
    assert stand_in.num_heads == 64
    assert Fraction(2 * mk.attention_macs(stand_in, 8192), mk.kv_bytes_read(stand_in, 8192)) == Fraction(1088, 9)
    assert roofline.limited_by(stand_in, 8192, *H200) == "memory"


def test_mla_caches_as_much_as_gqa_with_two_and_a_quarter_kv_heads():
    assert mk.kv_elements_per_token(V2) == 512 + 64
    assert Fraction(mk.kv_elements_per_token(V2), 2 * V2.qk_nope_head_dim) == Fraction(9, 4)


# ---------------------------------------------------------------------------------------------
# kv_cache_calculator: what the formula contains, and an 8-bit cache doubling the tokens
# ---------------------------------------------------------------------------------------------

def test_calculator_formula_for_llama_3_70b_sequences():
    per_sequence = mk.kv_cache_bytes(LLAMA, 8192, 1, "bf16")
    assert per_sequence == 80 * 2 * 8 * 128 * 2 * 8192  # 2.5 GiB
    assert mk.kv_cache_bytes(LLAMA, 8192, 32, "bf16") == 32 * per_sequence == 80 * 2**30  # 80 GiB
    assert mk.format_bytes(32 * per_sequence, "GB") == "85.9 GB"


@pytest.mark.parametrize("memory", [63_939_477_504, 10**9, 131_072 * 7 + 5])
def test_an_8_bit_cache_holds_twice_the_tokens_of_bf16(memory):
    llama8 = mk.PRESETS["llama-3-8b"]
    assert mk.kv_cache_bytes_per_token(llama8, "bf16") == 32 * 2 * 8 * 128 * 2  # 128 KiB
    assert mk.max_context_tokens(llama8, memory, "bf16") == memory // (32 * 2 * 8 * 128 * 2)
    assert mk.max_context_tokens(llama8, memory, "fp8") == memory // (32 * 2 * 8 * 128)
