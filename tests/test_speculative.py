"""Tests for mha_kit.speculative: expected tokens, the verification step's sampling, cache rollback."""
import numpy as np
import pytest

import mha_kit as mk

# Chi-square quantile at 0.999 for 3 degrees of freedom (4 categories), from the standard table:
# a correct sampler exceeds it with probability 1 in 1,000; the seed is fixed, so the test is
# deterministic.
CHI2_3DOF_999 = 16.266


def chi_square(counts, probs):
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


# ---------------------------------------------------------------------------------------------
# Expected tokens per step and the walltime model (Leviathan et al. 2023, Eq. 1 and Thm 3.8)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.6, 0.8, 0.95])
@pytest.mark.parametrize("k", [0, 1, 2, 5, 10])
def test_expected_tokens_is_the_capped_geometric_mean(alpha, k):
    # P(at least i+1 tokens) = alpha^i for i <= k: sum the tail probabilities.
    assert mk.speculative_expected_tokens(alpha, k) == pytest.approx(sum(alpha**i for i in range(k + 1)), rel=1e-12)


def test_expected_tokens_at_the_edges():
    assert mk.speculative_expected_tokens(1, 4) == 5.0  # every draft accepted, plus the bonus token
    assert mk.speculative_expected_tokens(0.0, 4) == 1.0  # nothing accepted: the correction only
    assert mk.speculative_expected_tokens(0.7, 0) == 1.0  # no draft: plain decoding
    assert mk.speculative_expected_tokens(1 - 1e-9, 4) == pytest.approx(5.0, rel=1e-7)  # continuous at 1


@pytest.mark.parametrize("alpha, k, speed", [(0.6, 2, "1.96"), (0.7, 3, "2.53"), (0.8, 2, "2.44"),
                                             (0.8, 5, "3.69"), (0.9, 2, "2.71"), (0.9, 10, "6.86")])
def test_speed_matches_table_1_of_leviathan_et_al(alpha, k, speed):
    # Table 1 assumes a free draft model, c = 0: the speed-up is the expected tokens per step.
    assert f"{mk.speculative_speedup(alpha, k, 0):.2f}" == speed


def test_speedup_charges_the_draft_runs():
    assert mk.speculative_speedup(0.8, 4, 0.05) == pytest.approx(mk.speculative_expected_tokens(0.8, 4) / 1.2)
    for alpha, c in ((0.5, 0.1), (0.9, 0.3)):  # Corollary 3.9: at k = 1 the factor is (1 + alpha) / (1 + c)
        assert mk.speculative_speedup(alpha, 1, c) == pytest.approx((1 + alpha) / (1 + c), rel=1e-12)
    # A verification step twice as long as a decode step (a compute-bound target) halves the gain.
    assert mk.speculative_speedup(0.8, 4, 0.05, verify_ratio=2.0) == pytest.approx(
        mk.speculative_expected_tokens(0.8, 4) / 2.2, rel=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: mk.speculative_expected_tokens(1.2, 3), r"alpha \(the acceptance rate\) must be a number in \[0, 1\]"),
    (lambda: mk.speculative_expected_tokens(True, 3), "alpha"),
    (lambda: mk.speculative_expected_tokens(0.5, -1), r"k \(draft tokens per step\) must be an integer >= 0"),
    (lambda: mk.speculative_expected_tokens(0.5, 2.0), "k "),
    (lambda: mk.speculative_speedup(0.5, 2, -0.1), "cost_ratio"),
    (lambda: mk.speculative_speedup(0.5, 2, 0.1, verify_ratio=0), r"verify_ratio \(verification time / decode"),
])
def test_bad_rates_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---------------------------------------------------------------------------------------------
# The verification step: modified rejection sampling
# ---------------------------------------------------------------------------------------------

P = np.array([0.5, 0.3, 0.15, 0.05])  # target distribution at every position (V = 4)
Q = np.array([0.1, 0.2, 0.3, 0.4])  # draft distribution: very different, most mass where P has little
K = 3


@pytest.fixture(scope="module")
def emitted():
    """The tokens of 8,000 verification steps, each on fresh draft tokens sampled from Q (fixed seed)."""
    rng = np.random.default_rng(0)
    target, draft = np.tile(P, (K + 1, 1)), np.tile(Q, (K, 1))
    return [mk.speculative_step(target, draft, rng.choice(4, size=K, p=Q), rng) for _ in range(8_000)]


def test_first_emitted_token_follows_the_target_not_the_draft(emitted):
    counts = np.bincount([tokens[0] for tokens in emitted], minlength=4)
    assert chi_square(counts, P) < CHI2_3DOF_999
    assert chi_square(counts, Q) > 100 * CHI2_3DOF_999  # the draft's distribution is clearly rejected


def test_token_after_an_accepted_draft_follows_the_target_too(emitted):
    counts = np.bincount([tokens[1] for tokens in emitted if len(tokens) > 1], minlength=4)
    assert counts.sum() > 2_000
    assert chi_square(counts, P) < CHI2_3DOF_999


def test_mean_tokens_per_step_matches_equation_1(emitted):
    alpha = float(np.minimum(P, Q).sum())  # Corollary 3.6: the acceptance rate is the overlap, 0.45 here
    lengths = np.array([len(tokens) for tokens in emitted])
    standard_error = lengths.std() / np.sqrt(lengths.size)
    assert abs(lengths.mean() - mk.speculative_expected_tokens(alpha, K)) < 4 * standard_error
    assert set(lengths.tolist()) == {1, 2, 3, 4}


def test_identical_models_accept_every_draft():
    rng = np.random.default_rng(3)
    drafts = [2, 0, 1]
    emitted = mk.speculative_step(np.tile(P, (4, 1)), np.tile(P, (3, 1)), drafts, rng)
    assert emitted[:3] == drafts and len(emitted) == 4  # all three, and a bonus token


def test_a_draft_the_target_never_emits_is_corrected_from_the_residual():
    target = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])  # position 1: the target is sure of token 1
    draft = np.array([[0.9, 0.1, 0.0]])
    assert mk.speculative_step(target, draft, [0], np.random.default_rng(4)) == [1]  # residual is all on 1


def test_a_step_without_drafts_samples_the_target():
    tokens = mk.speculative_step(np.array([[0.0, 0.0, 1.0]]), np.zeros((0, 3)), [], np.random.default_rng(5))
    assert tokens == [2]


@pytest.mark.parametrize("target, draft, tokens, message", [
    (np.tile(P, (3, 1)), np.tile(Q, (3, 1)), [0, 1, 2], r"expected target_probs of shape \(4, V\), got \(3, 4\)"),
    (np.tile(P, (4, 1)), np.tile(Q[:3], (3, 1)), [0, 1, 2], r"expected draft_probs of shape \(3, 4\), got \(3, 3\)"),
    (np.tile(P * 2, (4, 1)), np.tile(Q, (3, 1)), [0, 1, 2], "every row of target_probs must be a probability"),
    (np.tile(P, (4, 1)), np.tile(Q, (3, 1)), [0, 1, 4], r"draft_tokens must be ids in \[0, 4\)"),
    (np.tile(P, (4, 1)), np.tile(Q, (3, 1)), [0.0, 1.0, 2.0], "draft_tokens must be a 1-D sequence of token ids"),
    (np.tile(P, (2, 1)), np.array([[0.0, 0.5, 0.5, 0.0]]), [0], "positive draft probability"),
])
def test_bad_step_input_is_refused(target, draft, tokens, message):
    with pytest.raises(ValueError, match=message):
        mk.speculative_step(target, draft, tokens, np.random.default_rng(0))


def test_the_step_needs_a_generator():
    with pytest.raises(ValueError, match="rng must be a numpy Generator"):
        mk.speculative_step(np.tile(P, (2, 1)), np.tile(Q, (1, 1)), [0], np.random.RandomState(0))


# ---------------------------------------------------------------------------------------------
# Rolling back the rejected drafts' cache entries
# ---------------------------------------------------------------------------------------------

def _kv(rng, t, h_kv=2, d_h=4):
    return rng.standard_normal((h_kv, t, d_h)), rng.standard_normal((h_kv, t, d_h))


def test_paged_rollback_frees_the_blocks_of_rejected_tokens():
    rng = np.random.default_rng(6)
    pool = mk.BlockPool(num_blocks=8, block_size=4, num_kv_heads=2, head_dim=4)
    cache, reference = mk.PagedKVCache(pool), mk.KVCache(2, 4, max_len=16)
    prompt, verify, nxt = _kv(rng, 6), _kv(rng, 4), _kv(rng, 1)  # 6 cached, k = 3 drafts verified as 4 queries
    for c in (cache, reference):
        c.append(*prompt)
    cache.append(*verify)  # positions 6..9 written: 3 blocks
    assert (len(cache), len(cache.block_table), pool.num_used) == (10, 3, 3)
    accepted = 1  # the last accepted token and one draft stay, two drafts go
    assert mk.rollback_cache(cache, 3 - accepted) == 1  # positions 8, 9 were the third block's only tokens
    assert (len(cache), len(cache.block_table), pool.num_used) == (8, 2, 2)
    reference.append(verify[0][:, :2], verify[1][:, :2])
    for c in (cache, reference):
        c.append(*nxt)  # the next step writes where the rejected drafts were
    np.testing.assert_array_equal(cache.keys, reference.keys)
    np.testing.assert_array_equal(cache.values, reference.values)


def test_contiguous_rollback_moves_the_length_back():
    rng = np.random.default_rng(7)
    cache = mk.KVCache(2, 4, max_len=8)
    cache.append(*_kv(rng, 5))
    kept = cache.keys[:, :3].copy()
    assert mk.rollback_cache(cache, 2) == 0 and len(cache) == 3
    np.testing.assert_array_equal(cache.keys, kept)


def test_rollback_keeps_blocks_another_sequence_shares():
    pool = mk.BlockPool(num_blocks=4, block_size=2, num_kv_heads=1, head_dim=1)
    base = mk.PagedKVCache(pool)
    base.append(np.zeros((1, 4, 1)), np.zeros((1, 4, 1)))
    other = base.fork()
    assert mk.rollback_cache(other, 3) == 1  # its table lets go of block 1
    assert pool.ref_count[base.block_table].tolist() == [2, 1] and pool.num_used == 2


@pytest.mark.parametrize("n, message", [(6, "from 0 to the 5 cached tokens, got 6"), (-1, "got -1"),
                                        (True, "got True"), (1.0, "got 1.0")])
def test_rollback_refuses_what_the_cache_does_not_hold(n, message):
    cache = mk.KVCache(1, 1, max_len=8)
    cache.append(np.zeros((1, 5, 1)), np.zeros((1, 5, 1)))
    with pytest.raises(ValueError, match=message):
        mk.rollback_cache(cache, n)
    with pytest.raises(ValueError, match="expected a KVCache or PagedKVCache"):
        mk.rollback_cache(mk.RollingKVCache(1, 1, window=4), 1)


# ---------------------------------------------------------------------------------------------
# Verification raises decode attention's FLOPs per byte of cache
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, per_query", [("llama-3-70b", 8.0), ("falcon-7b", 71.0), ("gpt2", 1.0)])
@pytest.mark.parametrize("k", [0, 1, 4, 7])
def test_verification_intensity_is_k_plus_1_times_decode(name, per_query, k):
    # GQA in bf16: 2 g FLOPs per 2 bytes, g = h / h_kv (8 for Llama 3 70B, 71 for Falcon-7B's MQA, 1 for MHA).
    cfg = mk.PRESETS[name]
    assert mk.arithmetic_intensity(cfg, 4096, "bf16", queries_per_step=k + 1) == per_query * (k + 1)
    assert mk.arithmetic_intensity(cfg, 4096) == per_query  # the default is one decoded token


def test_verification_intensity_needs_a_query():
    with pytest.raises(ValueError, match="queries_per_step must be a positive integer"):
        mk.arithmetic_intensity(mk.PRESETS["llama-3-70b"], 4096, queries_per_step=0)


# vLLM's own cases for its n-gram proposer (tests/v1/spec_decode/test_ngram.py and the docstring of
# NgramProposer.propose): (tokens, min_n, max_n, k, drafts)
NGRAM_CASES = [
    ([1, 2, 3, 4, 2, 3], 2, 3, 4, [4, 2, 3]),  # docstring: [4, 2, 3] unseen, [2, 3] seen; only 3 tokens follow
    ([1, 2, 3, 4, 1, 2, 3, 5, 6], 2, 2, 2, []),  # [5, 6] never occurred before
    ([1, 2, 3, 4, 1, 2, 3], 2, 2, 3, [4, 1, 2]),
    ([1, 2, 3, 4, 1, 2, 3], 1, 1, 2, [4, 1]),
    ([1, 3, 6, 2, 3, 4, 1, 2, 3], 1, 1, 2, [6, 2]),  # the earliest occurrence of [3]
    ([1, 2, 3, 4, 5], 2, 2, 2, []),
    ([1, 2, 3, 4, 1, 2, 3], 4, 4, 2, []),  # no earlier 4-gram
    ([1, 2, 3, 4, 1, 2, 3], 3, 4, 2, [4, 1]),  # but a 3-gram
    ([2, 3, 4, 5, 1, 2, 3, 4, 1, 2, 3, 4], 3, 4, 2, [1, 2]),  # the 4-gram wins, not [5, 1]
    ([3, 4, 5, 2, 3, 4, 1, 2, 3, 4], 2, 4, 2, [1, 2]),  # the 3-gram wins, not [5, 2]
    ([1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3, 300, 1, 2, 3], 3, 3, 2, [100, 1]),  # several: the first
]


@pytest.mark.parametrize("tokens, min_n, max_n, k, drafts", NGRAM_CASES)
def test_ngram_propose_matches_vllm_cases(tokens, min_n, max_n, k, drafts):
    assert mk.ngram_propose(np.array(tokens), k, min_n, max_n) == drafts


def test_ngram_propose_by_brute_force():
    """Against a direct reading of the rule on random short sequences over a small vocabulary."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        tokens = rng.integers(0, 3, size=rng.integers(1, 12)).tolist()
        found = []
        for n in range(3, 0, -1):  # longest n-gram first, n from max_n = 3 down to min_n = 1
            starts = [s for s in range(len(tokens)) if s + n < len(tokens) and tokens[s:s + n] == tokens[len(tokens) - n:]]
            if n < len(tokens) and starts:
                found = tokens[starts[0] + n:starts[0] + n + 2]
                break
        assert mk.ngram_propose(tokens, 2, 1, 3) == found


def test_ngram_propose_refuses_bad_bounds():
    with pytest.raises(ValueError, match=r"^min_n \(3\) must be at most max_n \(2\)$"):
        mk.ngram_propose([1, 2, 3], 2, 3, 2)
    with pytest.raises(ValueError, match=r"^k must be a positive integer"):
        mk.ngram_propose([1, 2, 3], 0, 1, 2)
