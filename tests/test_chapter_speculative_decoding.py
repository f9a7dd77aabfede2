"""Claims of speculative_decoding's n-gram drafting paragraph, recomputed without mha_kit's proposer."""
import numpy as np


def _lookup(tokens, k, min_n, max_n):
    """vLLM's rule read directly: the longest earlier copy of the last n tokens, its earliest occurrence."""
    for n in range(max_n, min_n - 1, -1):
        hits = [s for s in range(len(tokens) - n) if tokens[s:s + n] == tokens[-n:]] if n < len(tokens) else []
        if hits:
            return tokens[hits[0] + n:hits[0] + n + k]
    return []


def _tokens_per_step(document, answer):
    context, steps = list(document), 0
    while len(context) < len(document) + len(answer):
        drafts, truth = _lookup(context, 4, 2, 5), answer[len(context) - len(document):]
        accepted = 0
        while accepted < min(len(drafts), len(truth)) and drafts[accepted] == truth[accepted]:
            accepted += 1
        context += truth[:accepted + 1]
        steps += 1
    return len(answer) / steps


def test_quoting_answer_gains_and_new_text_does_not():
    """The chapter's cell, same seed and same draws: 2.63 tokens per step quoting, 1.00 on new text."""
    rng = np.random.default_rng(0)
    document = rng.integers(0, 32000, size=2000).tolist()
    quotes = [document[s:s + 40] + rng.integers(0, 32000, size=10).tolist() for s in rng.integers(0, 1960, size=6)]
    new_text = rng.integers(0, 32000, size=300).tolist()
    assert f"{_tokens_per_step(document, sum(quotes, [])):.2f}" == "2.63"
    assert _tokens_per_step(document, new_text) == 1.0


def test_moe_draft_sized_against_active_parameters():
    """mlx-lm issue #1132: a 9B draft for a 17B-active target, 3 drafts. Leviathan et al. eq. (1) and
    Theorem 3.8 written out: E[tokens] = (1 - a^(k+1)) / (1 - a), speed-up = E / (k c + v)."""
    c, k = 9 / 17, 3
    assert round(k * c, 1) == 1.6

    def speedup(alpha, v):
        return (1 - alpha ** (k + 1)) / (1 - alpha) / (k * c + v)

    assert f"{speedup(0.8, 1.0):.2f}" == "1.14"
    assert f"{speedup(0.8, 1.5):.2f}" == "0.96"
    assert speedup(0.7, 1.0) < 1 < speedup(0.8, 1.0)


def test_a_separate_draft_costs_the_target_sequences():
    """speculative_decoding-walltime: a Llama 3 8B draft beside Llama 3 70B (TP8, bf16, 8K) fits 111 of 162 sequences."""
    p70, p8 = 70_553_706_496, 8_030_261_248  # parameters: Llama 3 70B and 8B (config.json shapes)
    kv70 = 80 * 1 * 128 * 2 * 2 * 8192  # layers x one KV head per GPU at TP8 x head dim x (k, v) x bf16 x tokens
    kv8 = 32 * 1 * 128 * 2 * 2 * 8192
    usable = 0.9 * 80 * 10**9
    alone = int((usable - 2 * p70 / 8) // kv70)
    drafted = int((usable - 2 * (p70 + p8) / 8) // (kv70 + kv8))
    assert (alone, drafted) == (162, 111)
    assert round(100 * drafted / alone) == 69 and kv8 / kv70 == 0.4
