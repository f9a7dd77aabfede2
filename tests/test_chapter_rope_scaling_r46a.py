"""Section rope_scaling-context-limits: why prompt and generated tokens share max_model_len.

Recomputed without mha_kit: Llama 3.1's default max_model_len is its max_position_embeddings, 131,072
(the llama3 rope type already counts the stretch); Llama 3 8B's cache is 2 (K, V) x 32 layers x 8 KV
heads x 128 x 2 bytes per token (Meta's config.json).
"""
import chapter_outputs

NB = chapter_outputs.notebook("rope_scaling")
SECTION = chapter_outputs.section(NB, "rope_scaling-context-limits")
OUT = chapter_outputs.printed(NB, 'window = served["Llama 3.1')
WINDOW, PROMPT = 131_072, 120_000


def test_accept_and_reject():
    assert f"prompt {PROMPT:,} + max_tokens {WINDOW - PROMPT:>6,} = {WINDOW:,}: accepted" in OUT
    assert f"prompt {PROMPT:,} + max_tokens 12,000 = {PROMPT + 12_000:,}: rejected: 132,000 > {WINDOW:,}" in OUT


def test_last_position_and_cache():
    cache = 2 * 32 * 8 * 128 * 2 * WINDOW
    assert cache == 16 * 2**30
    assert f"last generated token at position {WINDOW - 1:,}" in OUT and "cache then 16 GiB" in OUT


def test_reason_linked_and_cited():
    chapter_outputs.assert_cited(SECTION, ["raffel2020t5"])
    assert "{ref}`decoding_sampling-length-control`" in SECTION and "{ref}`positions-rope-cache`" in SECTION
    assert "prompt *plus* the generated tokens" in SECTION
