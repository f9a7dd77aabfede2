"""Every figure the article quotes, recomputed from configs and compared exactly.

The expected values are the article's own strings ("1,048,576", "320 KiB", "82.2%"), so each
test checks both the exact integer and the text the book prints.
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mha_kit as mk

LLAMA = mk.PRESETS["llama-3-70b"]
# The article's context length for Llama 3 70B, typed on purpose: these tests check the record
# (mk.MODEL_FACTS) and the counting against the article by hand, so they must not read either.
CONTEXT = 8192


def test_record_context_is_the_article_s():
    # The chapters decode at the record's context_length; the article's figures hold at 8,192.
    assert mk.MODEL_FACTS["llama-3-70b"].context_length == CONTEXT


def article_int(text):
    """The article's number written with thousands separators, as an int."""
    return int(text.replace(",", ""))


def assert_article(computed, text):
    """Exact int equality with the article's figure, and the same printed form."""
    assert type(computed) is int
    assert computed == article_int(text)
    assert mk.format_int(computed) == text


# ---------------------------------------------------------------------------------------------
# First principles: d = 512, h = 8 against one head
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h", [1, 8])  # one full-width head, or 8 heads of 64
def test_projection_parameters_do_not_depend_on_heads(h):
    assert_article(mk.projection_params(mk.AttentionConfig(512, h)), "1,048,576")


def test_head_size_of_the_transformer():
    assert mk.AttentionConfig(512, 8).head_dim == 64
    assert mk.PRESETS["transformer-base"].head_dim == 64
    assert mk.PRESETS["transformer-base"].d_model // mk.PRESETS["transformer-base"].num_heads == 64


@pytest.mark.parametrize("h", [1, 8])
def test_sequence_multiply_adds_do_not_depend_on_heads(h):
    assert_article(mk.sequence_attention_macs(mk.AttentionConfig(512, h), 128), "16,777,216")


@pytest.mark.parametrize("h, text", [(8, "131,072"), (1, "16,384")])  # heads multiply the scores held
def test_score_counts(h, text):
    assert_article(mk.score_count(mk.AttentionConfig(512, h), 128), text)


def test_toy_example_output_shape():
    x, weights, cfg = mk.toy_example()
    out, _ = mk.multi_head_attention(x, *weights, cfg.num_heads)
    assert str(out.shape) == "(3, 4)"
    assert (cfg.d_model, cfg.num_heads, cfg.head_dim) == (4, 2, 2)  # d = 4, h = 2, so heads of 2


# ---------------------------------------------------------------------------------------------
# Worked example: Llama 3 70B at an 8,192-token context, per layer, one decoded token
# ---------------------------------------------------------------------------------------------

def test_llama_3_70b_shape():
    assert (LLAMA.d_model, LLAMA.num_layers, LLAMA.num_heads, LLAMA.num_kv_heads) == (8192, 80, 64, 8)
    assert LLAMA.head_dim == 128 == LLAMA.d_model // LLAMA.num_heads
    assert LLAMA.group_size == 8  # each key-value head serves 8 query heads


def test_llama_3_70b_projection_matrices():
    by_matrix = mk.projection_params_by_matrix(LLAMA)
    assert_article(by_matrix["q"], "67,108,864")
    assert_article(by_matrix["o"], "67,108,864")
    assert_article(by_matrix["k"], "8,388,608")
    assert_article(by_matrix["v"], "8,388,608")
    assert_article(mk.projection_params(LLAMA), "150,994,944")
    assert_article(mk.projection_params(LLAMA.with_kv_heads(None)), "268,435,456")  # all 64 heads with own K, V
    # each parameter is used once per token: the projection multiply-adds fall by the same amount
    assert_article(mk.projection_macs(LLAMA), "150,994,944")
    assert_article(mk.projection_macs(LLAMA.with_kv_heads(None)), "268,435,456")


@pytest.mark.parametrize("h_kv, variant", [(None, "mha"), (8, "gqa"), (1, "mqa")])
def test_llama_3_70b_attention_multiply_adds_are_the_same_in_every_variant(h_kv, variant):
    cfg = LLAMA.with_kv_heads(h_kv)
    assert cfg.variant == variant
    assert_article(mk.attention_macs(cfg, CONTEXT), "134,217,728")
    assert mk.attention_macs(cfg, CONTEXT) == 2 * 64 * 8192 * 128  # the article's product


@pytest.mark.parametrize(
    "h_kv, text",
    [
        (None, "268,435,456"),  # multi-head: 64 key-value heads
        (8, "33,554,432"),  # grouped-query: 8 key-value heads
        (1, "4,194,304"),  # multi-query: 1 key-value head
    ],
)
def test_llama_3_70b_bytes_read_per_decoded_token(h_kv, text):
    assert_article(mk.kv_bytes_read(LLAMA.with_kv_heads(h_kv), CONTEXT, fmt="bf16"), text)
    assert_article(mk.kv_bytes_read(LLAMA.with_kv_heads(h_kv), CONTEXT, fmt=16), text)  # "16-bit numbers"


def test_llama_3_70b_cache_per_token():
    per_token = mk.kv_cache_bytes_per_token(LLAMA)
    assert_article(per_token, "327,680")
    assert mk.format_bytes(per_token) == "320 KiB"
    assert per_token == 320 * 1024  # 1 KiB is 1,024 bytes


def test_llama_3_70b_cache_per_token_with_one_kv_head():
    per_token = mk.kv_cache_bytes_per_token(LLAMA.with_kv_heads(1))
    assert mk.format_bytes(per_token) == "40 KiB"
    assert per_token == 40 * 1024


def test_gqa_cache_is_one_eighth_of_mha():
    mha = mk.kv_cache_bytes_per_token(LLAMA.with_kv_heads(None))
    assert 8 * mk.kv_cache_bytes_per_token(LLAMA) == mha
    assert mk.format_bytes(mha) == "2.5 MiB"  # 8 x 320 KiB


# ---------------------------------------------------------------------------------------------
# Trade-offs: DeepSeek-V2 (MLA) against DeepSeek 67B (GQA)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "bits, text",
    [
        (16, "82.2%"),  # both caches in 16-bit numbers
        (6, "93.3%"),  # DeepSeek-V2's cache quantised to about 6 bits, 67B kept at 16
    ],
)
def test_deepseek_v2_cache_reduction(bits, text):
    dense = mk.kv_cache_bytes_per_token(mk.PRESETS["deepseek-67b"], "bf16")
    latent = mk.kv_cache_bytes_per_token(mk.PRESETS["deepseek-v2"], bits)
    assert mk.format_percent(mk.cache_reduction(latent, dense)) == text


def test_deepseek_cache_sizes_by_hand():
    # 67B: 95 layers x 2 x 8 heads x 128 x 2 bytes; V2: 60 layers x (512 + 64) x 2 bytes
    assert mk.kv_cache_bytes_per_token(mk.PRESETS["deepseek-67b"]) == 95 * 2 * 8 * 128 * 2
    assert mk.kv_cache_bytes_per_token(mk.PRESETS["deepseek-v2"]) == 60 * 576 * 2
    assert mk.kv_cache_bytes_per_token(mk.PRESETS["deepseek-v2"], 6) == 60 * 576 * 6 // 8


# ---------------------------------------------------------------------------------------------
# A newcomer reproduces the worked example in five lines
# ---------------------------------------------------------------------------------------------

FIVE_LINES = textwrap.dedent("""\
    import mha_kit as mk
    cfg = mk.PRESETS["llama-3-70b"]
    print(mk.format_int(mk.projection_params(cfg)), mk.format_int(mk.attention_macs(cfg, 8192)))
    print(mk.format_int(mk.kv_bytes_read(cfg, 8192)), mk.format_bytes(mk.kv_cache_bytes_per_token(cfg)))
    print(mk.format_bytes(mk.kv_cache_bytes_per_token(cfg.with_kv_heads(1))))
""")


def test_worked_example_in_five_lines():
    assert len(FIVE_LINES.splitlines()) == 5
    result = subprocess.run([sys.executable, "-W", "error", "-c", FIVE_LINES],
                            capture_output=True, text=True, timeout=60)
    assert result.stderr == ""
    assert result.stdout.splitlines() == ["150,994,944 134,217,728", "33,554,432 320 KiB", "40 KiB"]


def test_module_docstring_example():
    # The package docstring promises this line; keep it true.
    assert "'320 KiB'" in mk.__doc__
    assert mk.format_bytes(mk.kv_cache_bytes_per_token(mk.PRESETS["llama-3-70b"])) == "320 KiB"


def test_numbers_are_python_ints_even_from_numpy_inputs():
    cfg = mk.AttentionConfig(np.int64(8192), np.int64(64), np.int64(8))
    for value in (mk.projection_params(cfg), mk.attention_macs(cfg, np.int64(8192)),
                  mk.kv_bytes_read(cfg, np.int64(8192))):
        assert type(value) is int
    assert mk.attention_macs(cfg, np.int64(8192)) == article_int("134,217,728")
