"""Tests for mha_kit.counting against independent references.

The references are of three kinds: the sizes of the arrays mha_kit actually builds (weights,
caches, attention weights), multiply-add counts of the matrix products written out shape by
shape, and plain formulas evaluated with exact fractions.
"""
import dataclasses
import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

# A grid of attention shapes (d, h, h_kv, d_h, layers), one comment per case.
ATTENTION_SHAPES = [
    (4, 2, 2, 2, 1),  # the toy example: MHA, 2 heads of 2
    (12, 6, 3, 2, 2),  # GQA with g = 2
    (12, 6, 1, 2, 3),  # MQA
    (10, 4, 2, 3, 1),  # head_dim given, h * d_h != d
    (16, 1, 1, 16, 4),  # a single full-width head
]

# MLA shapes (d, h, d_c, d_rope, d_nope, d_v, d_c', layers).
LATENT_SHAPES = [
    (16, 2, 6, 2, 3, 4, 5, 1),  # with query compression
    (16, 2, 6, 2, 3, 4, None, 2),  # without query compression (V2-Lite style)
    (8, 4, 3, 4, 1, 2, 8, 1),  # latent narrower than the rotary key, d_c' == d
]


def _cfg(d, h, h_kv, d_h, layers):
    return mk.AttentionConfig(d, h, h_kv, d_h, layers)


def _latent_cfg(d, h, d_c, rope, nope, v, q_rank, layers):
    return mk.LatentAttentionConfig(d, h, d_c, rope, nope, v, q_rank, layers)


def _matmul_macs(a_shape, b_shape):
    """Multiply-adds of ``a @ b`` for (..., m, k) @ (..., k, n): one per (batch, m, k, n)."""
    assert a_shape[-1] == b_shape[-2]
    batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    return math.prod(batch) * a_shape[-2] * a_shape[-1] * b_shape[-1]


def _exact_bytes(elements, bits):
    """Whole bytes for ``elements`` numbers of ``bits`` each, via an exact fraction."""
    return math.ceil(Fraction(elements * bits, 8))


# ---------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ATTENTION_SHAPES)
def test_projection_params_equal_weight_sizes(shape):
    cfg = _cfg(*shape)
    w_q, w_k, w_v, w_o = mk.init_weights(cfg)
    by_matrix = mk.projection_params_by_matrix(cfg)
    assert by_matrix == {"q": w_q.size, "k": w_k.size, "v": w_v.size, "o": w_o.size}
    assert mk.projection_params(cfg) == w_q.size + w_k.size + w_v.size + w_o.size
    assert type(mk.projection_params(cfg)) is int
    assert all(type(v) is int for v in by_matrix.values())


@pytest.mark.parametrize("shape", LATENT_SHAPES)
def test_latent_projection_params_equal_weight_sizes(shape):
    cfg = _latent_cfg(*shape)
    weights = mk.init_latent_weights(cfg)
    sizes = [getattr(weights, f).size for f in weights.__dataclass_fields__ if getattr(weights, f) is not None]
    assert mk.projection_params(cfg) == sum(sizes)
    assert type(mk.projection_params(cfg)) is int


@pytest.mark.parametrize("name", [n for n, c in mk.PRESETS.items() if isinstance(c, mk.AttentionConfig)])
def test_projection_params_formula_on_presets(name):
    cfg = mk.PRESETS[name]
    d, h, h_kv, d_h = cfg.d_model, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    assert mk.projection_params(cfg) == 2 * d * h * d_h + 2 * d * h_kv * d_h
    assert mk.projection_params(cfg) == sum(mk.projection_params_by_matrix(cfg).values())


def test_deepseek_v2_projection_params_by_hand():
    # d=5120, h=128, d_c=512, d_rope=64, d_nope=128, d_v=128, d_c'=1536
    expected = (5120 * 1536 + 1536 * 128 * (128 + 64)  # query down, up (nope and rope parts)
                + 5120 * 512 + 512 * 128 * (128 + 128)  # kv down, key and value up
                + 5120 * 64  # shared rotary key
                + 128 * 128 * 5120)  # output
    assert mk.projection_params(mk.PRESETS["deepseek-v2"]) == expected


@pytest.mark.parametrize("tokens", [1, 7, 8192])  # one decoded token, a short and a long prompt
@pytest.mark.parametrize("shape", ATTENTION_SHAPES)
def test_projection_macs_from_matmul_shapes(tokens, shape):
    cfg = _cfg(*shape)
    # x (t, d) @ W (d_in, d_out) for each of the four matrices (W_O reads the merged heads)
    expected = sum(_matmul_macs((tokens, w.shape[0]), w.shape) for w in mk.init_weights(cfg))
    assert mk.projection_macs(cfg, tokens) == expected
    assert type(mk.projection_macs(cfg, tokens)) is int


def test_projection_macs_default_is_one_token():
    cfg = mk.PRESETS["llama-3-8b"]
    assert mk.projection_macs(cfg) == 2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128


# ---------------------------------------------------------------------------------------------
# Multiply-adds and scores
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ATTENTION_SHAPES)
@pytest.mark.parametrize(
    "n, s",
    [
        (1, 1),  # first decoded token
        (1, 9),  # one decoded token over a cache of 9
        (5, 5),  # a whole sequence
        (3, 8),  # chunked prefill: 3 new tokens over 8 keys
    ],
)
def test_attention_macs_from_matmul_shapes(shape, n, s):
    cfg = _cfg(*shape)
    h, d_h = cfg.num_heads, cfg.head_dim
    scores = _matmul_macs((h, n, d_h), (h, d_h, s))  # q k^T
    mix = _matmul_macs((h, n, s), (h, s, d_h))  # weights v
    assert mk.attention_macs(cfg, s, num_queries=n) == scores + mix
    assert type(mk.attention_macs(cfg, s, num_queries=n)) is int


@pytest.mark.parametrize("shape", ATTENTION_SHAPES)
def test_attention_macs_ignore_kv_heads(shape):
    cfg = _cfg(*shape)
    counts = {mk.attention_macs(cfg.with_kv_heads(h_kv), 33, 2, form) for h_kv in (None, 1)
              for form in ("absorbed", "naive")}
    assert counts == {mk.attention_macs(cfg, 33, 2)}


@pytest.mark.parametrize("shape", LATENT_SHAPES)
@pytest.mark.parametrize("n, s", [(1, 4), (6, 6), (2, 11)])  # decode, full pass, chunk over a cache
def test_latent_attention_macs_from_matmul_shapes(shape, n, s):
    cfg = _latent_cfg(*shape)
    h, d_c, rope, nope, v = cfg.num_heads, cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim, cfg.v_head_dim
    # absorbed: MQA over [c_KV, k_rope] (scores) and c_KV (values)
    absorbed = _matmul_macs((h, n, d_c + rope), (1, d_c + rope, s)) + _matmul_macs((h, n, s), (1, s, d_c))
    # naive: full per-head keys of nope + rope and values of v
    naive = _matmul_macs((h, n, nope + rope), (h, nope + rope, s)) + _matmul_macs((h, n, s), (h, s, v))
    assert mk.attention_macs(cfg, s, n) == absorbed
    assert mk.attention_macs(cfg, s, n, form="absorbed") == absorbed
    assert mk.attention_macs(cfg, s, n, form="naive") == naive
    assert mk.sequence_attention_macs(cfg, s) == _matmul_macs((h, s, d_c + rope), (1, d_c + rope, s)) \
        + _matmul_macs((h, s, s), (1, s, d_c))


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 16), d_h=st.integers(1, 256), n=st.integers(1, 4096))
def test_sequence_attention_macs_is_2_n2_d(h, d_h, n):
    cfg = mk.AttentionConfig(h * d_h, h)
    assert mk.sequence_attention_macs(cfg, n) == 2 * n * n * (h * d_h)  # independent of h
    assert mk.sequence_attention_macs(cfg, n) == mk.attention_macs(cfg, n, num_queries=n)


@pytest.mark.parametrize(
    "d, h, h_kv, n",
    [
        (4, 2, 2, 3),  # toy example
        (12, 6, 2, 5),  # GQA
        (12, 6, 1, 4),  # MQA: scores still per query head
        (8, 1, 1, 1),  # a single token, single head
    ],
)
def test_score_count_equals_weights_held(d, h, h_kv, n):
    cfg = mk.AttentionConfig(d, h, h_kv)
    x = np.random.default_rng(0).standard_normal((n, d))
    _, weights = mk.multi_head_attention(x, *mk.init_weights(cfg), h, h_kv)
    assert mk.score_count(cfg, n) == weights.size
    assert type(mk.score_count(cfg, n)) is int


def test_latent_score_count_equals_weights_held():
    cfg = _latent_cfg(*LATENT_SHAPES[0])
    x = np.random.default_rng(0).standard_normal((5, cfg.d_model))
    _, weights = mk.latent_attention(x, mk.init_latent_weights(cfg), cfg)
    assert mk.score_count(cfg, 5) == weights.size


# ---------------------------------------------------------------------------------------------
# Cache sizes and bytes
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ATTENTION_SHAPES)
def test_kv_elements_per_token_equals_cache_growth(shape):
    cfg = _cfg(*shape)
    cache = mk.KVCache(cfg.num_kv_heads, cfg.head_dim, max_len=4, dtype=np.float16)
    x = np.random.default_rng(1).standard_normal((3, cfg.d_model))
    mk.cached_attention(x, *mk.init_weights(cfg), cfg.num_heads, cache)
    assert mk.kv_elements_per_token(cfg) == (cache.keys.size + cache.values.size) // 3
    assert mk.kv_elements_per_token(cfg) == 2 * cfg.num_kv_heads * cfg.head_dim
    # bytes read for one layer equal the bytes the filled fp16 cache holds
    assert mk.kv_bytes_read(cfg, 3, "fp16") == cache.nbytes
    assert type(mk.kv_elements_per_token(cfg)) is int


@pytest.mark.parametrize("shape", LATENT_SHAPES)
def test_latent_kv_elements_per_token_equals_cache_growth(shape):
    cfg = _latent_cfg(*shape)
    cache = mk.LatentCache(cfg.kv_lora_rank, cfg.qk_rope_head_dim, max_len=4, dtype=np.float32)
    x = np.random.default_rng(2).standard_normal((4, cfg.d_model))
    mk.latent_cached_attention(x, mk.init_latent_weights(cfg), cfg, cache)
    assert mk.kv_elements_per_token(cfg) == cache.keys.size // 4 == cfg.kv_lora_rank + cfg.qk_rope_head_dim
    assert mk.kv_bytes_read(cfg, 4, "fp32") == cache.nbytes


@pytest.mark.parametrize("shape", ATTENTION_SHAPES + LATENT_SHAPES)
@pytest.mark.parametrize("dtype, bits", [("bf16", 16), ("fp32", 32), ("int4", 4), (6, 6), (3, 3)])
@pytest.mark.parametrize("context, batch", [(1, 1), (7, 3), (8192, 2)])  # one token; odd sizes; long context
def test_cache_bytes_formulas(shape, dtype, bits, context, batch):
    cfg = _cfg(*shape) if len(shape) == 5 else _latent_cfg(*shape)
    if cfg.variant == "mla":
        per_layer = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    else:
        per_layer = 2 * cfg.num_kv_heads * cfg.head_dim
    layers = cfg.num_layers
    assert mk.kv_bytes_read(cfg, context, dtype) == _exact_bytes(context * per_layer, bits)
    assert mk.kv_cache_bytes_per_token(cfg, dtype) == _exact_bytes(layers * per_layer, bits)
    assert mk.kv_cache_bytes(cfg, context, batch, dtype) == _exact_bytes(batch * context * layers * per_layer, bits)
    for value in (mk.kv_bytes_read(cfg, context, dtype), mk.kv_cache_bytes_per_token(cfg, dtype),
                  mk.kv_cache_bytes(cfg, context, batch, dtype)):
        assert type(value) is int


def test_fractional_bytes_round_up_once_for_the_whole_cache():
    # 1 layer, 2 * 1 * 1 = 2 elements per token at 3 bits: 6 bits per token.
    cfg = mk.AttentionConfig(1, 1, 1, 1, 1)
    assert mk.kv_cache_bytes_per_token(cfg, 3) == 1  # 6 bits -> 1 byte
    assert mk.kv_cache_bytes(cfg, 4, fmt=3) == 3  # 24 bits, not 4 x 1 byte
    assert mk.kv_cache_bytes(cfg, 5, fmt=3) == 4  # 30 bits -> 4 bytes


def test_defaults_are_bf16_single_sequence():
    cfg = mk.PRESETS["mistral-7b"]
    assert mk.kv_cache_bytes(cfg, 100) == mk.kv_cache_bytes(cfg, 100, 1, "bf16") == 100 * 32 * 2 * 8 * 128 * 2
    assert mk.kv_bytes_read(cfg, 100) == 100 * 2 * 8 * 128 * 2
    assert mk.kv_cache_bytes_per_token(cfg) == 32 * 2 * 8 * 128 * 2


@pytest.mark.parametrize("name", list(mk.PRESETS))
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])  # whole bytes per element
def test_cache_bytes_scale_with_batch_and_context(name, dtype):
    cfg = mk.PRESETS[name]
    per_token = mk.kv_cache_bytes_per_token(cfg, dtype)
    assert mk.kv_cache_bytes(cfg, 1000, 4, dtype) == 4000 * per_token
    assert mk.kv_cache_bytes(cfg, 1000, 4, dtype) == 4 * mk.kv_cache_bytes(cfg, 1000, 1, dtype)
    assert mk.kv_cache_bytes(cfg, 1, 1, dtype) == per_token


@settings(max_examples=80, deadline=None)
@given(
    h_kv=st.integers(1, 8), g=st.integers(1, 8), d_h=st.integers(1, 64), layers=st.integers(1, 100),
    batch=st.integers(1, 16), dtype=st.sampled_from(["bf16", "fp32", "int4", "fp8", 3, 6, 7]),
    memory=st.integers(0, 10**10),
)
def test_max_context_tokens_is_the_largest_that_fits(h_kv, g, d_h, layers, batch, dtype, memory):
    cfg = mk.AttentionConfig(h_kv * g * d_h, h_kv * g, h_kv, d_h, layers)
    n = mk.max_context_tokens(cfg, memory, dtype, batch)
    assert type(n) is int and n >= 0
    if n > 0:
        assert mk.kv_cache_bytes(cfg, n, batch, dtype) <= memory  # fits at n
    assert mk.kv_cache_bytes(cfg, n + 1, batch, dtype) > memory  # does not fit at n + 1


@pytest.mark.parametrize("name", list(mk.PRESETS))
def test_max_context_tokens_on_presets(name):
    cfg = mk.PRESETS[name]
    memory = 80 * 2**30  # one 80 GiB accelerator
    n = mk.max_context_tokens(cfg, memory)
    assert mk.kv_cache_bytes(cfg, n) <= memory < mk.kv_cache_bytes(cfg, n + 1)
    assert mk.max_context_tokens(cfg, np.int64(memory)) == n  # numpy ints are fine
    assert mk.max_context_tokens(cfg, memory, batch_size=4) == memory // (4 * mk.kv_cache_bytes_per_token(cfg))


# ---------------------------------------------------------------------------------------------
# Ratios
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "h, h_kv, dtype, expected",
    [
        (8, 8, "bf16", 1.0),  # MHA: 2 FLOPs per MAC, 2 bytes per element -> 1 FLOP per byte
        (8, 2, "bf16", 4.0),  # GQA: each key is reused by g = 4 query heads
        (8, 1, "bf16", 8.0),  # MQA: g = 8
        (8, 1, "fp32", 4.0),  # 4-byte elements halve it
        (8, 1, "int4", 32.0),  # half-byte elements
    ],
)
def test_arithmetic_intensity_equals_group_size_per_element_byte(h, h_kv, dtype, expected):
    cfg = mk.AttentionConfig(16 * h, h, h_kv)
    assert mk.arithmetic_intensity(cfg, 100, dtype) == expected


@pytest.mark.parametrize(
    "smaller, larger, expected",
    [
        (1, 4, 0.75),
        (0, 5, 1.0),
        (5, 5, 0.0),
        (6, 3, -1.0),  # larger "smaller" cache gives a negative saving
    ],
)
def test_cache_reduction(smaller, larger, expected):
    assert mk.cache_reduction(smaller, larger) == expected


@pytest.mark.parametrize("smaller, larger", [(1, 0), (1, -3), (-1, 4)])  # no reference; negative sizes
def test_cache_reduction_errors(smaller, larger):
    with pytest.raises(ValueError, match=r"^cache sizes must be non-negative with a positive reference, got "):
        mk.cache_reduction(smaller, larger)


# ---------------------------------------------------------------------------------------------
# Error paths
# ---------------------------------------------------------------------------------------------

CFG = mk.AttentionConfig(16, 4, 2)

CONFIG_FUNCTIONS = [
    lambda c: mk.projection_params(c),
    lambda c: mk.projection_macs(c, 1),
    lambda c: mk.attention_macs(c, 4),
    lambda c: mk.sequence_attention_macs(c, 4),
    lambda c: mk.score_count(c, 4),
    lambda c: mk.kv_elements_per_token(c),
    lambda c: mk.kv_bytes_read(c, 4),
    lambda c: mk.kv_cache_bytes_per_token(c),
    lambda c: mk.kv_cache_bytes(c, 4),
    lambda c: mk.max_context_tokens(c, 1024),
    lambda c: mk.arithmetic_intensity(c, 4),
]


@pytest.mark.parametrize("function", CONFIG_FUNCTIONS)
@pytest.mark.parametrize("bad", [{"d_model": 16}, None, (16, 4)])  # a dict, nothing, a tuple
def test_functions_refuse_non_configs(function, bad):
    with pytest.raises(ValueError, match=r"^expected an AttentionConfig or LatentAttentionConfig, got "):
        function(bad)


def test_projection_params_by_matrix_refuses_latent_configs():
    with pytest.raises(ValueError, match=r"^expected an AttentionConfig, got LatentAttentionConfig$"):
        mk.projection_params_by_matrix(mk.PRESETS["deepseek-v2"])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda v: mk.projection_macs(CFG, v), "num_tokens"),
        (lambda v: mk.attention_macs(CFG, v), "context_len"),
        (lambda v: mk.attention_macs(CFG, 4, v), "num_queries"),
        (lambda v: mk.sequence_attention_macs(CFG, v), "context_len"),
        (lambda v: mk.score_count(CFG, v), "n"),
        (lambda v: mk.kv_bytes_read(CFG, v), "context_len"),
        (lambda v: mk.kv_cache_bytes(CFG, v), "context_len"),
        (lambda v: mk.kv_cache_bytes(CFG, 4, v), "batch_size"),
        (lambda v: mk.max_context_tokens(CFG, 1024, batch_size=v), "batch_size"),
        (lambda v: mk.arithmetic_intensity(CFG, v), "context_len"),
    ],
)
@pytest.mark.parametrize("bad", [0, -1, 2.0, True])  # zero, negative, float, bool
def test_counts_must_be_positive_integers(call, name, bad):
    with pytest.raises(ValueError, match=rf"^{name} must be a positive integer, got "):
        call(bad)


@pytest.mark.parametrize("cfg", [CFG, mk.PRESETS["deepseek-v2"]])  # checked for both kinds of config
def test_attention_macs_unknown_form(cfg):
    with pytest.raises(ValueError, match=r"^form must be 'absorbed' or 'naive', got 'fast'$"):
        mk.attention_macs(cfg, 4, form="fast")


def test_max_context_tokens_negative_memory():
    with pytest.raises(ValueError, match=r"^memory_bytes must be non-negative, got -1$"):
        mk.max_context_tokens(CFG, -1)


@pytest.mark.parametrize("memory, shown", [("1024", "'1024' (str)"), (1024.0, "1024.0 (float)"), (True, "True (bool)")])
def test_max_context_tokens_memory_is_a_whole_number_of_bytes(memory, shown):
    with pytest.raises(ValueError, match=rf"^memory_bytes must be a whole number of bytes, got {re.escape(shown)}$"):
        mk.max_context_tokens(CFG, memory)


@pytest.mark.parametrize(
    "call",
    [
        lambda: mk.kv_bytes_read(CFG, 4, "fp12"),
        lambda: mk.kv_cache_bytes_per_token(CFG, "fp12"),
        lambda: mk.kv_cache_bytes(CFG, 4, 1, "fp12"),
        lambda: mk.max_context_tokens(CFG, 1024, "fp12"),
    ],
)
def test_unknown_dtype_is_refused_everywhere(call):
    with pytest.raises(ValueError, match=r"^unknown number format 'fp12'"):
        call()


# ---------------------------------------------------------------------------------------------
# Weights against cache: the tokens at which the KV cache weighs as much as the model
# ---------------------------------------------------------------------------------------------

def test_kv_weight_crossover_for_llama_3_70b_by_hand():
    # Parameters: two 128,256 x 8,192 matrices (embeddings, output head), a final norm, and 80
    # layers of attention (2*8192*64*128 + 2*8192*8*128), SwiGLU (3*8192*28672) and two norms.
    layer = 2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672 + 2 * 8192
    params = 2 * 128_256 * 8192 + 80 * layer + 8192
    assert params == 70_553_706_496
    weight_bytes, cache_per_token = 2 * params, 80 * 2 * 8 * 128 * 2  # bf16 both: 141.1 GB, 320 KiB
    assert mk.model_params(mk.MODEL_FACTS["llama-3-70b"]) == params
    assert mk.kv_weight_crossover_tokens("llama-3-70b") == math.ceil(Fraction(weight_bytes, cache_per_token))
    assert mk.kv_weight_crossover_tokens("llama-3-70b") == 430_626  # "about 430K tokens" in bf16
    # An 8-bit cache under bf16 weights needs twice the tokens; both in fp8, the same count.
    assert mk.kv_weight_crossover_tokens("llama-3-70b", fmt="fp8", weight_fmt="bf16") == math.ceil(
        Fraction(weight_bytes, cache_per_token // 2))
    assert mk.kv_weight_crossover_tokens("llama-3-70b", fmt="fp8") == math.ceil(Fraction(params, cache_per_token // 2))


def test_kv_weight_crossover_for_deepseek_v2_by_hand():
    # 236B parameters (the paper's count, every expert); 60 layers x (512 + 64) cached numbers.
    v2 = mk.MODEL_FACTS["deepseek-v2"]
    cache_per_token = 60 * (512 + 64) * 2  # 69,120 bytes in bf16
    assert mk.kv_weight_crossover_tokens(v2) == math.ceil(Fraction(236_000_000_000 * 2, cache_per_token)) == 6_828_704
    # Deployed as the paper says (sec. 3.2.3): FP8 weights, a cache of about 6 bits per number.
    assert mk.kv_weight_crossover_tokens(v2, fmt=6, weight_fmt="fp8") == math.ceil(
        Fraction(236_000_000_000, 60 * 576 * 6 // 8))
    # At batch 1 an MoE step reads the 21B activated parameters, not all 236B.
    assert mk.kv_weight_crossover_tokens(v2, num_params=v2.active_params) == math.ceil(
        Fraction(21_000_000_000 * 2, cache_per_token)) == 607_639


@pytest.mark.parametrize("name", ["llama-3-8b", "llama-3.1-405b", "mistral-7b", "deepseek-v2-lite"])
def test_kv_weight_crossover_is_the_same_from_a_name_a_record_or_a_config(name):
    facts = mk.MODEL_FACTS[name]
    tokens = mk.kv_weight_crossover_tokens(name)
    assert tokens == mk.kv_weight_crossover_tokens(facts) == mk.kv_weight_crossover_tokens(facts.config)
    weight_bytes = 2 * mk.model_params(facts)
    per_token = mk.kv_cache_bytes_per_token(facts.config)
    assert (tokens - 1) * per_token < weight_bytes <= tokens * per_token  # the smallest count that reaches it


def test_kv_weight_crossover_of_a_changed_config_needs_a_parameter_count():
    llama = mk.PRESETS["llama-3-70b"]
    mha = llama.with_kv_heads(None)  # eight times the cache per token: an eighth of the tokens
    with pytest.raises(ValueError, match=r"^no model record for the config 'llama-3-70b \(h_kv=64\)': pass num_params"):
        mk.kv_weight_crossover_tokens(mha)
    assert mk.kv_weight_crossover_tokens(mha, num_params=70_553_706_496) == math.ceil(
        Fraction(2 * 70_553_706_496, 80 * 2 * 64 * 128 * 2))


@pytest.mark.parametrize("call, message", [
    (lambda: mk.kv_weight_crossover_tokens("llama-4"), r"^unknown preset 'llama-4'; known presets: transformer-base, "),
    (lambda: mk.kv_weight_crossover_tokens("gpt2"), r"^gpt2: no parameter count: the record has neither total_params "),
    (lambda: mk.kv_weight_crossover_tokens("llama-3-70b", num_params=0), r"^num_params must be a positive integer, got 0$"),
    (lambda: mk.kv_weight_crossover_tokens("llama-3-70b", num_params=7e10), r"^num_params must be a positive integer"),
    (lambda: mk.kv_weight_crossover_tokens("llama-3-70b", fmt="int3"), r"unknown number format|int3"),
    (lambda: mk.kv_weight_crossover_tokens(42), r"^expected an AttentionConfig or LatentAttentionConfig, got int$"),
    (lambda: mk.model_params(mk.PRESETS["gpt2"]), r"^expected a ModelFacts record"),
])
def test_kv_weight_crossover_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_records_refuse_an_active_count_above_the_total():
    v2 = mk.MODEL_FACTS["deepseek-v2"]
    with pytest.raises(ValueError, match=r"^active_params \(300000000000\) needs total_params at least as large"):
        dataclasses.replace(v2, config=mk.PRESETS["deepseek-v2"], active_params=300_000_000_000)
    with pytest.raises(ValueError, match=r"^total_params must be a positive integer, got 0$"):
        dataclasses.replace(v2, config=mk.PRESETS["deepseek-v2"], total_params=0)


# ---------------------------------------------------------------------------------------------
# What attention costs: crossover length, prefill vs decode, HBM traffic of the two algorithms
# ---------------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(h_kv=st.integers(1, 8), g=st.integers(1, 8), d_h=st.integers(1, 64), d=st.integers(1, 512),
       d_ff=st.one_of(st.none(), st.integers(1, 2048)))
def test_crossover_length_is_where_the_quadratic_terms_catch_up(h_kv, g, d_h, d, d_ff):
    cfg = mk.AttentionConfig(d, h_kv * g, h_kv, d_h)
    n = mk.crossover_length(cfg, d_ff)
    per_token = lambda t: mk.projection_macs(cfg, t) + (0 if d_ff is None else t * 3 * d * d_ff)  # noqa: E731
    assert mk.sequence_attention_macs(cfg, n) >= per_token(n)
    assert n == 1 or mk.sequence_attention_macs(cfg, n - 1) < per_token(n - 1)


@pytest.mark.parametrize("d, h", [(512, 8), (768, 12), (4096, 32)])  # Transformer base, GPT-2, Llama-sized MHA
def test_crossover_length_of_mha_is_twice_the_width(d, h):
    # P = 4 d^2 and c = 2 h d_h = 2 d, so n = 4 d^2 / (2 d) = 2 d whatever the number of heads.
    assert mk.crossover_length(mk.AttentionConfig(d, h)) == 2 * d


def test_crossover_length_of_llama_3_70b():
    facts = mk.MODEL_FACTS["llama-3-70b"]
    # projections: 2*8192*64*128 + 2*8192*8*128 = 150,994,944; c = 2*64*128 = 16,384
    assert mk.crossover_length(facts.config) == 150_994_944 // 16_384 == 9216
    # with the SwiGLU feed-forward: + 3*8192*28672 = 704,643,072 per token
    assert mk.crossover_length(facts.config, facts.intermediate_size) == (150_994_944 + 704_643_072) // 16_384 == 52224


def test_crossover_length_bad_intermediate_size():
    with pytest.raises(ValueError, match=r"^intermediate_size must be a positive integer, got 0$"):
        mk.crossover_length(CFG, 0)


def test_score_matrix_and_qkvo_bytes():
    cfg = mk.PRESETS["llama-3-70b"]
    assert mk.score_matrix_bytes(cfg, 8192) == 64 * 8192 * 8192 * 2  # h n^2 scores in bf16: 8 GiB
    assert mk.qkvo_bytes(cfg, 8192) == 8192 * (2 * 64 + 2 * 8) * 128 * 2  # 288 MiB
    assert mk.score_matrix_bytes(cfg, 8192, "fp32") == 2 * mk.score_matrix_bytes(cfg, 8192)


def test_qkvo_bytes_refuses_latent_configs():
    with pytest.raises(ValueError, match=r"^expected an AttentionConfig, got LatentAttentionConfig$"):
        mk.qkvo_bytes(mk.PRESETS["deepseek-v2"], 4)


@pytest.mark.parametrize("d, h, h_kv, d_h, n, s, b", [
    (4, 2, 2, 2, 3, 3, 1),  # toy MHA prefill
    (12, 6, 3, 2, 1, 9, 1),  # GQA decode over 9 cached tokens
    (12, 6, 1, 2, 1, 9, 5),  # MQA decode, a batch of 5
])
def test_layer_flops_and_bytes_by_hand(d, h, h_kv, d_h, n, s, b):
    cfg = mk.AttentionConfig(d, h, h_kv, d_h)
    weights = d * h * d_h * 2 + 2 * d * h_kv * d_h  # Q and O, K and V
    assert mk.layer_flops(cfg, n, s, b) == b * 2 * (n * weights + 2 * h * n * s * d_h)
    assert mk.layer_bytes(cfg, n, s, b) == 2 * (weights + b * (2 * n * d + s * 2 * h_kv * d_h))  # bf16
    flops, moved = b * 2 * (n * weights + 2 * h * n * s * d_h), 2 * (weights + b * (2 * n * d + s * 2 * h_kv * d_h))
    assert mk.layer_intensity(cfg, n, s, b) == pytest.approx(float(Fraction(flops, moved)), rel=1e-15)


def test_prefill_is_compute_bound_and_decode_memory_bound_on_h100():
    cfg, ridge = mk.PRESETS["llama-3-70b"], mk.GPUS["h100-sxm"].ridge_point
    assert mk.layer_intensity(cfg, 8192, 8192) > 10 * ridge  # prefill of 8,192 tokens
    assert mk.layer_intensity(cfg, 1, 8192) < 2  # one decoded token: about 1.7 FLOPs per byte
    assert mk.layer_intensity(cfg, 1, 8192, batch_size=64) < ridge / 10  # batching does not rescue it


def test_layer_bytes_bad_arguments():
    with pytest.raises(ValueError, match=r"^num_tokens must be a positive integer, got 0$"):
        mk.layer_bytes(CFG, 0, 4)
    with pytest.raises(ValueError, match=r"^batch_size must be a positive integer, got -1$"):
        mk.layer_flops(CFG, 1, 4, -1)


def _simulate_standard_io(n, d):
    """Algorithm 0 of the FlashAttention paper, line by line: (reads, writes) in elements."""
    steps = [
        (2 * n * d, n * n),  # 1: read Q, K; write S
        (n * n, n * n),  # 2: read S; write P
        (n * n + n * d, n * d),  # 3: read P, V; write O
    ]
    return sum(r + w for r, w in steps)


def _simulate_flash_io(n, d, m):
    """Algorithm 1 of the FlashAttention paper, loop by loop, block by block, in elements."""
    b_c = math.ceil(m / (4 * d))
    b_r = min(b_c, d)
    moved = n * d + 2 * n  # line 2: O, l, m initialised in HBM
    for j in range(0, n, b_c):
        cols = min(b_c, n - j)
        moved += 2 * cols * d  # line 6: load K_j, V_j
        for i in range(0, n, b_r):
            rows = min(b_r, n - i)
            moved += 2 * rows * d + 2 * rows  # line 8: load Q_i, O_i, l_i, m_i
            moved += rows * d + 2 * rows  # lines 12-13: write O_i, l_i, m_i
    return moved


@pytest.mark.parametrize("n, d", [(1, 1), (7, 3), (1024, 64), (8192, 128)])
def test_standard_attention_io_follows_algorithm_0(n, d):
    assert mk.standard_attention_io(n, d) == _simulate_standard_io(n, d) == 4 * n * d + 4 * n * n


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), d=st.integers(1, 16), extra=st.integers(0, 5000))
def test_flash_attention_io_follows_algorithm_1(n, d, extra):
    m = 4 * d + extra  # at least one row each of Q, K, V, O
    assert mk.flash_attention_io(n, d, m) == _simulate_flash_io(n, d, m)


def test_flash_attention_io_grows_like_n2_d2_over_m():
    # Theorem 2: Theta(N^2 d^2 / M). With 4d dividing M, T_c = 4Nd/M passes, each moving three
    # N x d matrices and four length-N vectors: 12 (1 + 4/(3d)) N^2 d^2 / M, plus lower-order terms.
    n, d = 2**16, 64
    for m in (2**12, 2**14, 2**16):
        ratio = Fraction(mk.flash_attention_io(n, d, m) * m, n * n * d * d)
        assert 12 * (1 + Fraction(4, 3 * d)) <= ratio <= 12 * (1 + Fraction(4, 3 * d)) * Fraction(101, 100), m


def test_flash_beats_standard_only_when_sram_is_large_against_d_squared():
    n, d = 8192, 128
    assert mk.flash_attention_io(n, d, d * d) > mk.standard_attention_io(n, d)  # M = d^2: more traffic
    assert mk.flash_attention_io(n, d, 192 * 1024 // 2) < mk.standard_attention_io(n, d)  # A100 SRAM, bf16


@pytest.mark.parametrize("d, m, expected", [
    (64, 256, (1, 1)),  # the smallest SRAM: one row of each
    (64, 98_304, (64, 384)),  # 192 KiB of bf16 with d = 64: B_r capped at d
    (128, 98_304, (128, 192)),
    (128, 1000, (2, 2)),  # ceil(1000 / 512) = 2
])
def test_flash_block_sizes(d, m, expected):
    assert mk.flash_block_sizes(d, m) == expected


def test_flash_block_sizes_sram_too_small():
    with pytest.raises(ValueError, match=r"^sram_elements \(255\) must hold one row each of Q, K, V and O: at least 4\*d = 256$"):
        mk.flash_block_sizes(64, 255)
    with pytest.raises(ValueError, match=r"^sram_elements must be a positive integer, got 0$"):
        mk.flash_attention_io(8, 64, 0)


@pytest.mark.parametrize("n, d", [(1, 1), (5, 2), (40, 3), (64, 8), (200, 4)])
def test_flash_io_break_even_against_a_scan_of_every_m(n, d):
    standard = mk.standard_attention_io(n, d)
    winners = [m for m in range(4 * d, 4 * n * d + 1) if mk.flash_attention_io(n, d, m) < standard]
    assert mk.flash_io_break_even(n, d) == (winners[0] if winners else None)


def test_flash_io_break_even_for_a_long_head_of_128():
    m = mk.flash_io_break_even(8192, 128)
    assert mk.flash_attention_io(8192, 128, m) < mk.standard_attention_io(8192, 128) <= mk.flash_attention_io(8192, 128, m - 1)
    assert 128 * 128 < m < 4 * 128 * 128  # a few times d^2, as the paper's remark on d^2 << M suggests


def test_flash_io_break_even_quoted_in_the_cost_chapter():
    # Algorithm 1 beats Algorithm 0 when 3nd + 2n + T_c (3nd + 4n) < 4nd + 4n^2, i.e. when
    # T_c < (nd + 4n^2 - 2n) / (3nd + 4n) = 84.8 for n = 8192, d = 128: T_c <= 84 needs
    # B_c >= ceil(8192 / 84) = 98, and the smallest M with ceil(M / 4d) = 98 is 4*128*97 + 1.
    n, d = 8192, 128
    assert (n * d + 4 * n * n - 2 * n) // (3 * n * d + 4 * n) == 84
    assert mk.flash_io_break_even(n, d) == 4 * d * (math.ceil(n / 84) - 1) + 1 == 49_665
