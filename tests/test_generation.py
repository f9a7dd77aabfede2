"""mha_kit.generation: a whole generation's FLOPs and bytes against sums written out step by step."""
import pytest

import mha_kit as mk
from mha_kit.generation import GenerationBytes, generation_bytes, generation_flops

LLAMA8 = mk.MODEL_FACTS["llama-3-8b"]


def _step_flops(facts, position_count, keys):
    """One forward pass of one new position attending to ``keys`` keys, with its logits (by hand)."""
    cfg = facts.config
    linear = 2 * cfg.num_layers * (mk.projection_params(cfg) + 3 * cfg.d_model * facts.intermediate_size)
    attention = cfg.num_layers * keys * 2 * (2 * cfg.num_heads * cfg.head_dim)  # scores + mix, 2 FLOPs per MAC
    return position_count * linear + attention + 2 * facts.vocab_size * cfg.d_model


@pytest.mark.parametrize("prompt_len", [1, 7, 1000])  # one token, a short prompt, the chapter's prompt
def test_one_new_token_is_a_prefill_with_or_without_a_cache(prompt_len):
    assert generation_flops(LLAMA8, prompt_len, 1) == mk.prefill_flops(LLAMA8, prompt_len)
    assert generation_flops(LLAMA8, prompt_len, 1, cached=False) == mk.prefill_flops(LLAMA8, prompt_len)


@pytest.mark.parametrize("prompt_len, new_tokens", [(1, 2), (5, 9), (300, 40)])
def test_cached_generation_is_a_prefill_then_one_token_steps(prompt_len, new_tokens):
    # decode step k (1..T-1) runs position P + k - 1 (0-based) against P + k keys, itself included
    steps = sum(_step_flops(LLAMA8, 1, prompt_len + k) for k in range(1, new_tokens))
    assert generation_flops(LLAMA8, prompt_len, new_tokens) == mk.prefill_flops(LLAMA8, prompt_len) + steps


@pytest.mark.parametrize("prompt_len, new_tokens", [(1, 2), (5, 9), (300, 40)])
def test_uncached_generation_reruns_every_prefix(prompt_len, new_tokens):
    reruns = sum(mk.prefill_flops(LLAMA8, prompt_len + k) for k in range(new_tokens))
    assert generation_flops(LLAMA8, prompt_len, new_tokens, cached=False) == reruns


def test_the_saving_grows_with_the_length():
    # uncached / cached is about (P + T) / 2 per position for the linear part: it grows with the length
    ratios = [generation_flops(LLAMA8, n, n, cached=False) / generation_flops(LLAMA8, n, n) for n in (256, 1024, 4096)]
    assert ratios[0] < ratios[1] < ratios[2]
    assert ratios[1] > 100


def test_preset_name_and_record_agree():
    assert generation_flops("llama-3-8b", 10, 10) == generation_flops(LLAMA8, 10, 10)


def test_generation_bytes_by_hand():
    per_token = mk.kv_cache_bytes_per_token(LLAMA8.config)
    cfg = LLAMA8.config
    # bf16; the input embedding table is looked up, not streamed (its 128,256 x 4,096 entries)
    weights = 2 * (mk.dense_decoder_params(LLAMA8) - 128_256 * 4_096)
    assert LLAMA8.vocab_size == 128_256 and cfg.d_model == 4_096
    p, t = 4, 3  # prefill (writes 4), step 1 reads 4 and writes 1, step 2 reads 5 and writes 1
    assert generation_bytes(LLAMA8, p, t) == GenerationBytes(
        weights_read=3 * weights, cache_read=(4 + 5) * per_token, cache_written=6 * per_token)
    assert generation_bytes(LLAMA8, 9, 1) == GenerationBytes(weights, 0, 9 * per_token)


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="param_layout 'llama'"):
        generation_flops(mk.MODEL_FACTS["falcon-7b"], 1, 1)
    with pytest.raises(ValueError, match="param_layout 'llama'"):
        generation_bytes("no-such-model", 1, 1)
    with pytest.raises(ValueError, match="new_tokens must be a positive integer"):
        generation_flops(LLAMA8, 5, 0)
    with pytest.raises(ValueError, match="prompt_len must be a positive integer"):
        generation_bytes(LLAMA8, 2.0, 1)
