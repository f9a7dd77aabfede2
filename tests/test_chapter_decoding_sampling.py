"""The numbers of the chapter "Decoding and sampling", recomputed without mha_kit.sampling where possible."""
import itertools
import re

import numpy as np

import mha_kit as mk

Z = np.array([4.0, 3.2, 2.5, 1.8, 1.0, 0.3, -0.5, -1.5])


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def nucleus_size(logits, p):
    """Smallest number of top tokens whose probabilities reach p (Holtzman et al. 2020, §3.1)."""
    probs = np.sort(softmax(logits))[::-1]
    return int(np.searchsorted(np.cumsum(probs), p) + 1)


def test_temperature_and_top_p_on_the_small_vector():
    assert round(softmax(Z)[0], 3) == 0.534 and round(softmax(Z / 0.5)[0], 3) == 0.789
    assert nucleus_size(Z, 0.9) == 4 == np.isfinite(mk.top_k_top_p_mask(Z[None], 8, 0.9)).sum()
    assert [nucleus_size(Z / t, 0.9) for t in (0.5, 0.7, 1.0, 1.5)] == [2, 3, 4, 5]


def test_top_p_adapts_to_entropy():
    flat = np.random.default_rng(0).normal(0.0, 0.5, size=50)
    peaked = flat.copy()
    peaked[0] = 9.0
    assert (nucleus_size(peaked, 0.9), nucleus_size(flat, 0.9)) == (1, 41)


def test_split_count_changes_the_sum_and_the_greedy_token():
    rng = np.random.default_rng(0)
    terms = (rng.standard_normal(4096) * rng.standard_normal(4096)).astype(np.float32)
    sums = []
    for chunks in (32, 16, 7, 4, 2, 1):  # the heuristic's choices for batches 1 .. 32
        total = np.float32(0)
        for chunk in np.array_split(terms, chunks):
            partial = np.float32(0)
            for v in chunk:
                partial = np.float32(partial + v)
            total = np.float32(total + partial)
        sums.append(float(total))
    rival = float(np.median(sums))
    assert len(set(sums)) == 6 and {s > rival for s in sums} == {True, False}


def test_split_heuristic_choices():
    h100, llama8 = mk.GPUS["h100-sxm"], mk.MODEL_FACTS["llama-3-8b"]
    got = [mk.split_kv_heuristic(mk.decode_work_items(b, llama8.config.num_kv_heads), 2 * h100.num_sms, 32)
           for b in (1, 2, 4, 8, 16, 32)]
    assert got == [32, 16, 7, 4, 2, 1]


def test_frequency_penalty_drop():
    after = Z.copy()
    after[1] -= 3 * 0.5  # token 1 generated three times
    after[6] -= 0.5  # token 6 once
    drop = softmax(Z)[1] / softmax(after)[1]
    assert np.isclose(drop, np.exp(1.5) * np.exp(after).sum() / np.exp(Z).sum())  # e^1.5 less the renormalisation
    penalised = mk.apply_penalties(Z[None], [[0]], [[1, 1, 1, 6]], frequency=0.5)[0]
    assert np.allclose(penalised, after)


def test_bitmask_bytes():
    assert -(-128_256 // 32) * 4 == 16_032 and 4 * 128_256 == 513_024


def test_beam_toy_and_the_true_optimum():
    P = np.array([[0, .5, .2, .15, .1, .05], [0, 0, .55, .2, .15, .1], [0, .6, 0, .15, .1, .15],
                  [0, .1, .1, .1, .3, .4], [0, .15, .1, .3, .05, .4], [0, 0, 0, 0, 0, 1.0]])
    with np.errstate(divide="ignore"):
        logP = np.log(P)
    tokens, score = mk.beam_search(logP, 0, 4, 12, eos=5)
    assert tokens == [1, 2, 5] and np.isclose(score, np.log(0.5 * 0.55 * 0.15))
    best = max((sum(logP[a, b] for a, b in zip((0,) + seq, seq)), seq)
               for n in range(1, 5) for seq in itertools.product(range(1, 6), repeat=n) if seq[-1] == 5 and 5 not in seq[:-1])
    assert best[1] == (3, 5) and np.isclose(best[0], np.log(0.15 * 0.4)) and best[0] > score  # the beam missed it
    assert mk.beam_search(logP, 0, 4, 12, eos=5, length_alpha=1.0)[0] == [1, 2] * 6


def test_toy_json_grammar_output_is_valid():
    digits = "0123456789"
    fsm = {(0, "{"): 1, (1, " "): 1, (1, '"'): 2, (2, "n"): 3, (3, '"'): 4, (4, ":"): 5, (5, " "): 5}
    fsm.update({(5, d): 6 for d in digits} | {(6, d): 6 for d in digits} | {(6, " "): 7, (6, "}"): 8, (7, "}"): 8})
    vocab = ["{", '{"', '"', "n", '"n"', '":', ":", " ", "1", "2", "7", "42", "}", "7}", "x", "null", '"a"', "],"]
    index = mk.token_index(fsm, vocab, range(9))
    rng = np.random.default_rng(0)
    for _ in range(50):
        state, text = 0, ""
        while state != 8:
            token = int(rng.choice(sorted(index[state])))
            text, state = text + vocab[token], index[state][token]
        assert re.fullmatch(r'\{ *"n": *\d+ *\}', text), text


def test_acceptance_rates_of_the_toy():
    rng = np.random.default_rng(1)
    target = rng.standard_normal((2000, 200)) * 6.0
    draft = target + rng.standard_normal(target.shape) * 1.5
    greedy = np.mean(target.argmax(-1) == draft.argmax(-1))

    def alpha(t):
        p = np.exp(target / t - (target / t).max(-1, keepdims=True))
        q = np.exp(draft / t - (draft / t).max(-1, keepdims=True))
        return np.minimum(p / p.sum(-1, keepdims=True), q / q.sum(-1, keepdims=True)).sum(-1).mean()

    values = [alpha(t) for t in (0.5, 1.0, 1.5)]
    assert round(greedy, 2) == 0.67 and round(values[1], 2) == 0.71
    assert greedy < values[0] < values[1] < values[2]
    assert np.isclose((1 - values[1] ** 5) / (1 - values[1]), mk.speculative_expected_tokens(values[1], 4))


def _toy_fsm():
    digits = "0123456789"
    fsm = {(0, "{"): 1, (1, " "): 1, (1, '"'): 2, (2, "n"): 3, (3, '"'): 4, (4, ":"): 5, (5, " "): 5}
    fsm.update({(5, d): 6 for d in digits} | {(6, d): 6 for d in digits} | {(6, " "): 7, (6, "}"): 8, (7, "}"): 8})
    vocab = ["{", '{"', '"', "n", '"n"', '":', ":", " ", "1", "2", "7", "42", "}", "7}", "x", "null", '"a"', "],"]
    return fsm, vocab


def test_spellings_the_mask_allows():
    """Every split of '{"n":42}' into vocabulary tokens, checked character by character on the automaton."""
    fsm, vocab = _toy_fsm()
    target = '{"n":42}'

    def accepted(text):
        state = 0
        for char in text:
            if (state, char) not in fsm:
                return False
            state = fsm[(state, char)]
        return state == 8

    count = 0
    stack = [("", 0)]  # prefixes of the target built from whole tokens
    while stack:
        text, depth = stack.pop()
        if text == target:
            count += accepted(text)
            continue
        stack.extend((text + tok, depth + 1) for tok in vocab if target.startswith(text + tok))
    assert count == 5


def test_forced_run_after_the_key_quote():
    fsm, _ = _toy_fsm()
    moves = {s: [c for (st, c) in fsm if st == s] for s in range(9)}
    assert moves[2] == ["n"] and moves[3] == ['"'] and moves[4] == [":"] and len(moves[5]) > 1  # 'n":' is forced
