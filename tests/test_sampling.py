"""mha_kit.sampling against its sources: vLLM's V1 sampler, CTRL and OpenAI penalties, xgrammar's bitmask,
Outlines' token index, Leviathan et al.'s acceptance rate."""
import numpy as np
import pytest

import mha_kit as mk

Z = np.array([[3.0, 2.0, 1.0, 0.5, -1.0]])


def test_temperature_divides_and_greedy_rows_stay():
    out = mk.apply_temperature(np.vstack([Z, Z]), [2.0, 0.0])
    assert np.allclose(out[0], Z[0] / 2) and np.array_equal(out[1], Z[0])


def test_top_k_keeps_the_k_largest():
    out = mk.top_k_top_p_mask(Z, 2, 1.0)
    assert np.isfinite(out).tolist() == [[True, True, False, False, False]]


def test_top_p_keeps_the_nucleus_as_vllm_does():
    # softmax(Z) = 0.624, 0.229, 0.084, ...: 0.624 < 0.8, 0.853 >= 0.8, so two tokens
    probs = np.exp(Z[0]) / np.exp(Z[0]).sum()
    assert probs[0] < 0.8 <= probs[0] + probs[1]
    assert np.isfinite(mk.top_k_top_p_mask(Z, 5, 0.8)).sum() == 2
    assert np.isfinite(mk.top_k_top_p_mask(Z, 5, 0.01)).sum() == 1  # the largest always survives


def test_min_p_threshold_is_relative_to_the_top_token():
    probs = np.exp(Z[0]) / np.exp(Z[0]).sum()
    keep = probs >= 0.1 * probs.max()
    assert np.array_equal(np.isfinite(mk.min_p_mask(Z, 0.1))[0], keep)


def test_penalties_follow_vllm_apply_penalties():
    out = mk.apply_penalties(Z, [[0]], [[1, 1, 4]], repetition=1.2, frequency=0.5, presence=0.3)
    expected = [3 / 1.2, 2 / 1.2 - 0.5 * 2 - 0.3, 1.0, 0.5, -1 * 1.2 - 0.5 - 0.3]
    assert np.allclose(out[0], expected)


def test_exponential_race_draws_from_p():
    rng = np.random.default_rng(0)
    p = np.array([[0.5, 0.3, 0.2]])
    draws = [mk.exponential_race(p, rng.exponential(size=p.shape))[0] for _ in range(20_000)]
    assert np.allclose(np.bincount(draws, minlength=3) / 20_000, p[0], atol=0.015)


def test_seeded_row_does_not_depend_on_the_batch():
    logits = np.tile(Z, (3, 1))
    a = mk.sample_tokens(logits, 1.0, 5, 1.0, 0.0, np.random.default_rng(1), seeds=[None, 7, None])
    b = mk.sample_tokens(logits[1:2], 1.0, 5, 1.0, 0.0, np.random.default_rng(99), seeds=[7])
    assert a[1] == b[0]
    assert mk.sample_tokens(logits, 0.0, 5, 1.0, 0.0, np.random.default_rng(0)).tolist() == [0, 0, 0]


def test_bitmask_round_trip_and_full_word():
    allowed = np.random.default_rng(0).random((3, 70)) > 0.5
    mask = mk.pack_token_bitmask(allowed)
    assert mask.shape == (3, 3) and mask.dtype == np.int32
    assert np.array_equal(np.isfinite(mk.apply_token_bitmask(np.zeros((3, 70)), mask)), allowed)
    assert mk.pack_token_bitmask(np.ones((1, 32), dtype=bool))[0, 0] == -1  # vLLM's "allow all" word


def test_token_index_walks_multi_character_tokens():
    transitions = {(0, "{"): 1, (1, "}"): 2, (1, '"'): 3, (3, "a"): 3, (3, '"'): 1}
    index = mk.token_index(transitions, ["{", "{}", '"a', "}", "x"], [0, 1, 3])
    assert index[0] == {0: 0 + 1, 1: 2} and index[1] == {2: 3, 3: 2} and index[3] == {}


def test_chunked_sum_depends_on_the_split():
    values = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    sums = {float(mk.chunked_sum(values, c)) for c in (1, 2, 4, 8, 16)}
    assert len(sums) > 1
    tiny = np.array([1.0, 1e8, -1e8, 1.0], dtype=np.float32)  # float32 spacing at 1e8 is 8
    assert mk.chunked_sum(tiny, 1) == 1.0  # ((1 + 1e8) - 1e8) + 1: the first 1 is lost, the last kept
    assert mk.chunked_sum(tiny, 2) == 0.0  # (1 + 1e8) + (-1e8 + 1): both lost


def test_beam_search_finds_the_best_sequence_on_a_small_table():
    probs = np.array([[0.0, 0.6, 0.4], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])  # 0 -> 1 or 2, then 2 is eos
    with np.errstate(divide="ignore"):
        table = np.log(probs)
    tokens, score = mk.beam_search(table, 0, 2, 3, eos=2)
    assert tokens == [1, 2] and np.isclose(score, np.log(0.6))  # 0.6 * 1.0 beats 0.4


def test_length_normalisation_prefers_the_longer_likely_answer():
    # after 0: eos 0.4 or token 1 (0.6); after 1: token 1 again 0.5, token 3 0.45, eos 0.05; after 3: eos
    probs = np.zeros((4, 4))
    probs[0, 2], probs[0, 1], probs[1, 1], probs[1, 3], probs[1, 2], probs[3, 2] = 0.4, 0.6, 0.5, 0.45, 0.05, 1.0
    with np.errstate(divide="ignore"):
        table = np.log(probs)
    assert mk.beam_search(table, 0, 4, 3, eos=2)[0] == [2]  # raw sum: the one-token answer wins
    assert mk.beam_search(table, 0, 4, 3, eos=2, length_alpha=1.0)[0] == [1, 3, 2]  # per token: 0.27 ** (1/3) > 0.4


@pytest.mark.parametrize("call, match", [
    (lambda: mk.apply_temperature(Z, -1.0), "temperature must lie"),
    (lambda: mk.apply_temperature(np.zeros(3), 1.0), "expected logits of shape"),
    (lambda: mk.top_k_top_p_mask(Z, 0, 1.0), "top_k must lie"),
    (lambda: mk.top_k_top_p_mask(Z, 2.5, 1.0), "whole number"),
    (lambda: mk.top_k_top_p_mask(Z, 2, 0.0), "top_p must lie"),
    (lambda: mk.min_p_mask(Z, 1.5), "min_p must lie"),
    (lambda: mk.apply_penalties(Z, [[0]], [[9]]), "token ids must lie"),
    (lambda: mk.apply_penalties(Z, [[0], [1]], [[1]]), "one per row"),
    (lambda: mk.apply_penalties(Z, [[0]], [[1]], repetition=0.0), "repetition must lie"),
    (lambda: mk.exponential_race(np.ones((1, 3)) / 3, np.zeros((1, 3))), "positive noise"),
    (lambda: mk.pack_token_bitmask(np.ones((2, 3))), "boolean mask"),
    (lambda: mk.apply_token_bitmask(Z, np.zeros((1, 2), dtype=np.int32)), "int32 bitmask"),
    (lambda: mk.token_index({}, [""], [0]), "non-empty string"),
    (lambda: mk.chunked_sum(np.ones(3), 4), "num_chunks in"),
    (lambda: mk.beam_search(np.zeros((2, 3)), 0, 1, 1, 1), "square"),
    (lambda: mk.acceptance_rate(np.ones((1, 2)), np.ones((1, 3)) / 3), "same shape"),
    (lambda: mk.acceptance_rate(np.ones((1, 2)), np.ones((1, 2)) / 2), "summing to 1"),
])
def test_errors_name_the_rule(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_acceptance_rate_is_one_minus_total_variation():
    p, q = np.array([[0.7, 0.2, 0.1]]), np.array([[0.4, 0.4, 0.2]])
    assert np.isclose(mk.acceptance_rate(p, q)[0], 1 - 0.5 * np.abs(p - q).sum())
    assert np.isclose(mk.acceptance_rate(p, p)[0], 1.0)
