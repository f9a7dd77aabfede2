"""Tests of the functions added for holdout questions U2-3, U2-10, U2-24 and U2-42, and of the numbers
the new sections quote (decoding_sampling, positions, why_attention), recomputed independently."""
import numpy as np
import pytest

import mha_kit as mk

# The toy bigram table of chapter "Decoding and sampling" (0 = start, 5 = end of sequence).
P = np.array([
    [0.00, 0.50, 0.20, 0.15, 0.10, 0.05],
    [0.00, 0.00, 0.55, 0.20, 0.15, 0.10],
    [0.00, 0.60, 0.00, 0.15, 0.10, 0.15],
    [0.00, 0.10, 0.10, 0.10, 0.30, 0.40],
    [0.00, 0.15, 0.10, 0.30, 0.05, 0.40],
    [0.00, 0.00, 0.00, 0.00, 0.00, 1.00],
])
with np.errstate(divide="ignore"):
    LOG_P = np.log(P)


# --- gnmt_length_penalty: Wu et al. 2016, sec. 7, lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha -----------------
@pytest.mark.parametrize("length, alpha, expected", [(1, 0.7, 1.0), (7, 0.0, 1.0), (10, 1.0, 15 / 6), (19, 0.5, 2.0)])
def test_gnmt_length_penalty_hand_values(length, alpha, expected):
    assert mk.gnmt_length_penalty(length, alpha) == pytest.approx(expected)


def test_gnmt_length_penalty_vectorised_and_increasing():
    lp = mk.gnmt_length_penalty(np.arange(1, 20), 0.6)
    assert lp.shape == (19,) and np.all(np.diff(lp) > 0)


@pytest.mark.parametrize("length, alpha", [(0, 0.5), (3, -0.1)])
def test_gnmt_length_penalty_rejects(length, alpha):
    with pytest.raises(ValueError, match="length must be >= 1 and alpha >= 0"):
        mk.gnmt_length_penalty(length, alpha)


# --- beam_search_stopping: Hugging Face's early_stopping rules ------------------------------------------------
def test_raw_sum_answer_matches_plain_beam_search():
    plain, plain_score = mk.beam_search(LOG_P, 0, 4, 12, eos=5, length_alpha=0.0)
    for rule in (True, False, "never"):
        tokens, score, _ = mk.beam_search_stopping(LOG_P, 0, 4, 12, eos=5, length_penalty=0.0, early_stopping=rule)
        assert tokens == plain == [1, 2, 5] and score == pytest.approx(plain_score)


def test_early_stopping_true_stops_sooner_and_changes_the_answer_under_a_penalty():
    _, _, step_true = mk.beam_search_stopping(LOG_P, 0, 4, 12, eos=5, length_penalty=0.0, early_stopping=True)
    _, _, step_never = mk.beam_search_stopping(LOG_P, 0, 4, 12, eos=5, length_penalty=0.0, early_stopping="never")
    assert (step_true, step_never) == (9, 12)
    first, _, _ = mk.beam_search_stopping(LOG_P, 0, 4, 12, eos=5, length_penalty=1.0, early_stopping=True)
    full, _, _ = mk.beam_search_stopping(LOG_P, 0, 4, 12, eos=5, length_penalty=1.0, early_stopping="never")
    assert first == [1, 2, 1, 2, 1, 2, 1, 2, 5] and len(full) == 12 and full[-1] != 5


def test_never_rule_stops_when_the_bound_is_met():
    # one likely path to the end token: after 3 finished hypotheses no open beam can win
    table = np.log(np.array([[1e-9, 0.5, 0.5 - 2e-9, 1e-9], [1e-9, 1e-9, 1e-9, 1.0], [1e-9, 1e-9, 1e-9, 1.0],
                             [1e-9, 1e-9, 1e-9, 1.0]]))
    tokens, score, step = mk.beam_search_stopping(table, 0, 2, 10, eos=3, length_penalty=1.0, early_stopping="never")
    assert tokens == [1, 3] and step < 10 and score == pytest.approx(np.log(0.5))


def test_beam_search_stopping_rejects():
    with pytest.raises(ValueError, match="square"):
        mk.beam_search_stopping(np.zeros((3, 4)), 0, 2, 5, eos=2)
    with pytest.raises(ValueError, match="early_stopping must be"):
        mk.beam_search_stopping(LOG_P, 0, 2, 5, eos=5, early_stopping="sometimes")


# --- round_bf16: against ml_dtypes' bfloat16 cast and bf16's 8 significant bits ----------------------------------
def test_round_bf16_integers():
    assert np.array_equal(mk.round_bf16(np.arange(257)), np.arange(257))  # exact up to 256
    assert mk.round_bf16([257, 259, 4097, 8191]).tolist() == [256, 260, 4096, 8192]  # ties to even, spacing 32


def test_round_bf16_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(0).normal(0, 1e3, size=10_000).astype(np.float32)
    expected = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    assert np.array_equal(mk.round_bf16(x), expected)


def test_round_bf16_rejects_non_finite():
    with pytest.raises(ValueError, match="finite numbers only"):
        mk.round_bf16([1.0, np.inf])


def test_neox_issue_reproducer_in_fp16():
    # EleutherAI/gpt-neox #1003: emb[1857, 1] is 1044.2678 in fp32 and 1045 in fp16 (d = 32, base 10,000)
    inv_freq = 1.0 / 10_000 ** (np.arange(0, 32, 2) / 32)
    assert float(np.float16(1857) * inv_freq.astype(np.float16)[1]) == 1045.0
    assert float(np.float32(1857) * inv_freq.astype(np.float32)[1]) == pytest.approx(1044.2678, abs=1e-3)


# --- prune_heads: a KV head goes only with its whole group (Ainslie et al. 2023, sec. 2) -----------------------
def test_prune_heads_llama3_8b():
    assert mk.prune_heads([i for i in range(32) if i % 4 in (2, 3)], 32, 8) == (16, 8)
    assert mk.prune_heads(range(16), 32, 8) == (16, 4)
    assert mk.prune_heads([], 32, 8) == (32, 8)
    assert mk.prune_heads(range(7), 8, 8) == (1, 1)


@pytest.mark.parametrize("pruned, h, h_kv, match", [([32], 32, 8, "must lie in"), (range(4), 4, 2, "leave at least one"),
                                                    ([0], 6, 4, "divisible")])
def test_prune_heads_rejects(pruned, h, h_kv, match):
    with pytest.raises(ValueError, match=match):
        mk.prune_heads(pruned, h, h_kv)


def test_pruned_cache_per_token_written_out():
    # Llama 3 8B: 2 (K, V) x 32 layers x h_kv x 128 x 2 bytes
    cfg = mk.PRESETS["llama-3-8b"]
    for h, h_kv in ((16, 8), (16, 4)):
        pruned = mk.AttentionConfig(d_model=4096, num_heads=h, num_kv_heads=h_kv, head_dim=128, num_layers=32)
        assert mk.kv_cache_bytes_per_token(pruned) == 2 * 32 * h_kv * 128 * 2
    assert mk.kv_cache_bytes_per_token(cfg) == 131_072


# --- the sampler's bytes (decoding_sampling-sampler-cost) --------------------------------------------------------
def test_lm_head_and_logits_bytes():
    assert mk.MODEL_FACTS["llama-3-8b"].vocab_size == 128_256
    head = 128_256 * 4096 * 2
    assert head == 1_050_673_152
    total = 2 * mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"])
    assert 0.06 < head / total < 0.07
    assert 256 * 128_256 * 4 == 131_334_144  # float32 logits of a batch of 256
