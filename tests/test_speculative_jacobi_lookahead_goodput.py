"""Tests for mha_kit.speculative's Jacobi decoding, lookahead's step size,
the early-exit (self-speculative) walltime model and the goodput choice of draft length."""
import numpy as np
import pytest

import mha_kit as mk


# ---------------------------------------------------------------------------------------------
# jacobi_decode (Santilli et al. 2023, Sec. 3): the fixed point is greedy decoding, in <= n passes
# ---------------------------------------------------------------------------------------------
def _bigram_model(table):
    """A causal 'model' whose greedy next token depends only on the current token."""
    return lambda tokens: [table[t] for t in tokens]


def test_jacobi_reaches_greedy_output_of_a_bigram_model():
    table = [3, 0, 4, 1, 2]  # next token of 0..4
    prefix, guess = [0], [1, 1, 1, 1]
    tokens, trajectory = mk.jacobi_decode(_bigram_model(table), prefix, guess)
    assert tokens == [3, 1, 0, 3]  # greedy: 0 -> 3 -> 1 -> 0 -> 3, by hand
    assert trajectory[0] == guess
    assert len(trajectory) - 1 <= len(guess)  # at most n passes


def test_jacobi_first_j_tokens_final_after_pass_j():
    table = [3, 0, 4, 1, 2]
    truth = [3, 1, 0, 3]
    _, trajectory = mk.jacobi_decode(_bigram_model(table), [0], [2, 2, 2, 2])
    for j, guess in enumerate(trajectory[1:], start=1):
        assert guess[:j] == truth[:j]


def test_jacobi_correct_guess_costs_one_pass():
    table = [1, 2, 3, 4, 0]
    tokens, trajectory = mk.jacobi_decode(_bigram_model(table), [0], [1, 2, 3])
    assert tokens == [1, 2, 3] and len(trajectory) == 2


def test_jacobi_errors():
    model = _bigram_model([0, 1])
    with pytest.raises(ValueError, match="prefix and a guess"):
        mk.jacobi_decode(model, [], [0])
    with pytest.raises(ValueError, match="prefix and a guess"):
        mk.jacobi_decode(model, [0], [])
    with pytest.raises(ValueError, match="one token per position"):
        mk.jacobi_decode(lambda tokens: [0], [0], [1, 1])


# ---------------------------------------------------------------------------------------------
# lookahead_step_tokens (Fu et al. 2024, Sec. 3; README mask: 4-grams, window 5, two candidates)
# ---------------------------------------------------------------------------------------------
def test_lookahead_tokens_match_the_readme_mask():
    assert mk.lookahead_step_tokens(5, 4, 2) == 5 * 3 + 2 * 3 == 21
    assert mk.lookahead_step_tokens(7, 5, 7) == 56  # config_lade(LEVEL=5, WINDOW_SIZE=7, GUESS_SET_SIZE=7)
    assert mk.lookahead_step_tokens(1, 2, 0) == 1  # 2-grams, one position: plain Jacobi on one token


def test_lookahead_errors():
    with pytest.raises(ValueError, match="at least 2"):
        mk.lookahead_step_tokens(5, 1, 2)
    with pytest.raises(ValueError, match="guesses"):
        mk.lookahead_step_tokens(5, 4, -1)
    with pytest.raises(ValueError, match="window"):
        mk.lookahead_step_tokens(0, 4, 2)


# ---------------------------------------------------------------------------------------------
# self_speculative_speedup (LayerSkip, Elhoushi et al. 2024, Sec. 4): k E/L + (L - E)/L per step
# ---------------------------------------------------------------------------------------------
def test_self_speculative_hand_value():
    # alpha = 0.5, k = 2: 1.75 tokens; E = 8, L = 32: 2 * 0.25 + 1 = 1.5 target steps
    assert mk.self_speculative_speedup(0.5, 2, 8, 32) == pytest.approx(1.75 / 1.5, rel=1e-12)


def test_self_speculative_is_a_draft_of_cost_e_over_l():
    for alpha in (0.3, 0.6, 0.9):
        for k in (0, 1, 4):
            assert mk.self_speculative_speedup(alpha, k, 8, 32) == mk.speculative_speedup(alpha, k, 0.25)


def test_self_speculative_earlier_exit_is_cheaper_at_same_acceptance():
    assert mk.self_speculative_speedup(0.7, 4, 4, 32) > mk.self_speculative_speedup(0.7, 4, 8, 32)
    assert mk.self_speculative_speedup(0.7, 0, 8, 32) == 1.0  # no drafts: plain decoding


def test_self_speculative_errors():
    with pytest.raises(ValueError, match="below num_layers"):
        mk.self_speculative_speedup(0.5, 4, 32, 32)
    with pytest.raises(ValueError, match="exit_layer"):
        mk.self_speculative_speedup(0.5, 4, 0, 32)
    with pytest.raises(ValueError, match="alpha"):
        mk.self_speculative_speedup(1.5, 4, 8, 32)
    with pytest.raises(ValueError, match="draft tokens"):
        mk.self_speculative_speedup(0.5, -1, 8, 32)


# ---------------------------------------------------------------------------------------------
# goodput_draft_length (vLLM DynamicSpeculativeDecodingManager._compute_optimal_num_speculative_tokens)
# ---------------------------------------------------------------------------------------------
def _vllm_rule(acceptance_rate_per_pos, itl):
    """vLLM's loop, as read: first strictly greater goodput wins."""
    max_goodput, chosen = -1.0, None
    for num_drafts in range(len(acceptance_rate_per_pos) + 1):
        goodput = (1 + sum(acceptance_rate_per_pos[:num_drafts])) / itl[num_drafts]
        if goodput > max_goodput:
            max_goodput, chosen = goodput, num_drafts
    return chosen


def test_goodput_matches_vllm_loop_on_random_profiles():
    rng = np.random.default_rng(0)
    for _ in range(200):
        kmax = int(rng.integers(1, 9))
        rates = np.sort(rng.random(kmax))[::-1].tolist()
        times = (1 + np.cumsum(rng.random(kmax + 1))).tolist()
        assert mk.goodput_draft_length(rates, times) == _vllm_rule(rates, times)


def test_goodput_numerator_is_eq1_for_one_alpha():
    alpha, k = 0.8, 5
    rates = [alpha ** (i + 1) for i in range(k)]
    assert 1 + sum(rates) == pytest.approx(mk.speculative_expected_tokens(alpha, k), rel=1e-12)


def test_goodput_turns_speculation_off_when_verification_is_expensive():
    assert mk.goodput_draft_length([0.8, 0.64], [1.0, 1.0, 1.0]) == 2  # free verification: draft all
    assert mk.goodput_draft_length([0.8, 0.64], [1.0, 2.0, 3.0]) == 0  # each token doubles the step
    assert mk.goodput_draft_length([0.5], [1.0, 1.5]) == 0  # tie (1.0 vs 1.0): the shorter draft


def test_goodput_errors():
    with pytest.raises(ValueError, match="acceptance_per_pos"):
        mk.goodput_draft_length([1.2], [1.0, 1.0])
    with pytest.raises(ValueError, match="step_times must hold 2"):
        mk.goodput_draft_length([0.5], [1.0])
    with pytest.raises(ValueError, match="step_times"):
        mk.goodput_draft_length([0.5], [1.0, 0.0])
