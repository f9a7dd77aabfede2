"""Speculative decoding: draft k tokens cheaply, verify them in one step of the target model.

A draft model proposes ``k`` tokens one after another. The target model then runs once over the
last accepted token and the ``k`` drafts, ``k + 1`` queries in one step, which gives its
distribution at each of the ``k + 1`` positions. Modified rejection sampling (Leviathan et al.
2023, Algorithm 1; Chen et al. 2023) accepts draft token ``x_i`` with probability
``min(1, p_i(x_i) / q_i(x_i))``; at the first rejection it samples a correction from
``norm(max(0, p_i - q_i))`` and stops; if all ``k`` pass, it samples a bonus token from
``p_{k+1}``. Every step emits between 1 and ``k + 1`` tokens, distributed exactly as the target
model's own samples. The cache entries the step wrote for rejected drafts are then rolled back.

Book: chapter "Speculative decoding and the KV cache".
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .cache import KVCache
from .config import check_positive_int
from .serving import PagedKVCache


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha (the acceptance rate) must be a number in [0, 1], got {alpha!r}")
    return float(alpha)


def _check_draft_len(k):
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
        raise ValueError(f"k (draft tokens per step) must be an integer >= 0, got {k!r}")
    return int(k)


def speculative_expected_tokens(alpha, k) -> float:
    """Expected tokens one verification step emits: ``(1 - alpha^(k+1)) / (1 - alpha)``.

    Leviathan et al. 2023, Eq. (1): with each draft token accepted with probability ``alpha``,
    independently, the tokens emitted per step are a geometric count capped at ``k + 1``. At
    ``alpha = 1`` every draft passes and the step emits ``k + 1``; ``k = 0`` is plain decoding.

    Parameters
    ----------
    alpha : float in [0, 1]
        Acceptance rate, ``E[sum_x min(p(x), q(x))]`` (the paper's Corollary 3.6).
    k : int >= 0
        Draft tokens per step (the paper's gamma).

    Book: chapter "Speculative decoding and the KV cache".
    """
    alpha, k = _check_alpha(alpha), _check_draft_len(k)
    if alpha == 1:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def speculative_speedup(alpha, k, cost_ratio, verify_ratio=1.0) -> float:
    """Expected walltime speed-up over plain decoding: ``E[tokens] / (k c + v)``.

    Leviathan et al. 2023, Theorem 3.8, is the case ``v = 1``: a step costs ``k`` draft runs of
    ``c`` target steps each plus one target step, and emits :func:`speculative_expected_tokens`
    tokens. ``v`` is what the verification step of ``k + 1`` tokens costs against a plain decode
    step; it stays near 1 while the target is memory-bound and grows once the extra tokens
    make the step compute-bound (large batches).

    Parameters
    ----------
    alpha : float in [0, 1]
    k : int >= 0
    cost_ratio : float >= 0
        ``c``: time of one draft run over time of one target decode step.
    verify_ratio : float > 0
        ``v``: time of the verification step over time of one target decode step.

    Book: chapter "Speculative decoding and the KV cache".
    """
    c, v = cost_ratio, verify_ratio
    if isinstance(c, bool) or not isinstance(c, numbers.Real) or not 0 <= c < math.inf:
        raise ValueError(f"cost_ratio (draft time / target time) must be a finite number >= 0, got {c!r}")
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < v < math.inf:
        raise ValueError(f"verify_ratio (verification time / decode time) must be a finite number > 0, got {v!r}")
    return speculative_expected_tokens(alpha, k) / (k * c + v)


def _check_probs(name, probs, rows, vocab=None):
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[0] != rows or (vocab is not None and probs.shape[1] != vocab):
        expected = f"({rows}, {'V' if vocab is None else vocab})"
        raise ValueError(f"expected {name} of shape {expected}, got {probs.shape}")
    sums = probs.sum(axis=1)
    if not np.isfinite(probs).all() or (probs < 0).any() or (np.abs(sums - 1) > 1e-6).any():
        raise ValueError(f"every row of {name} must be a probability distribution: finite, >= 0, summing to 1")
    return probs


def _check_step_inputs(target_probs, draft_probs, draft_tokens, rng):
    tokens = np.asarray(draft_tokens)
    if tokens.ndim != 1 or (tokens.size and not np.issubdtype(tokens.dtype, np.integer)):
        raise ValueError(f"draft_tokens must be a 1-D sequence of token ids, got {draft_tokens!r}")
    k = tokens.size
    target = _check_probs("target_probs", target_probs, k + 1)
    draft = _check_probs("draft_probs", draft_probs, k, target.shape[1])
    if ((tokens < 0) | (tokens >= target.shape[1])).any():
        raise ValueError(f"draft_tokens must be ids in [0, {target.shape[1]}), got {tokens.tolist()}")
    if k and (draft[np.arange(k), tokens] == 0).any():
        raise ValueError("each draft token must have positive draft probability: it was sampled from draft_probs")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    return target, draft, tokens


def speculative_step(target_probs, draft_probs, draft_tokens, rng):
    """One verification step of speculative sampling: the tokens it emits.

    Parameters
    ----------
    target_probs : ndarray, shape (k + 1, V)
        The target model's next-token distribution at each of the ``k + 1`` positions of the
        verification step: after the prefix, after the first draft token, ..., after all ``k``.
    draft_probs : ndarray, shape (k, V)
        The draft model's distribution each draft token was sampled from.
    draft_tokens : sequence of int, length k
    rng : numpy.random.Generator

    Returns
    -------
    list of int
        The accepted prefix of ``draft_tokens`` and then one token: a correction sampled from
        ``norm(max(0, p_i - q_i))`` at the first rejection, or a bonus token from ``p_{k+1}``
        when all ``k`` are accepted. Between 1 and ``k + 1`` tokens.

    Book: chapter "Speculative decoding and the KV cache".
    """
    target, draft, tokens = _check_step_inputs(target_probs, draft_probs, draft_tokens, rng)
    for i, x in enumerate(tokens.tolist()):
        if rng.random() >= target[i, x] / draft[i, x]:  # rejected, with probability 1 - p/q when p < q
            residual = np.maximum(target[i] - draft[i], 0.0)  # (V,), unnormalised
            fix = residual if residual.sum() > 0 else target[i]  # p == q up to rounding: nothing to correct
            return tokens[:i].tolist() + [_sample(fix, rng)]
    return tokens.tolist() + [_sample(target[-1], rng)]


def _sample(weights, rng):
    """A token id drawn with probability proportional to ``weights`` (inverse of the running sum)."""
    cumulative = np.cumsum(weights)  # (V,)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), len(weights) - 1))


def rollback_cache(cache, num_tokens):
    """Drop the last ``num_tokens`` tokens of a cache: the entries of rejected draft tokens.

    The verification step wrote keys and values for all ``k + 1`` of its positions; after
    ``a`` drafts are accepted, the last ``k - a`` entries belong to tokens that were never
    emitted. A contiguous :class:`mha_kit.KVCache` only moves its length back (the slots are
    overwritten later); a :class:`mha_kit.PagedKVCache` also returns to the pool each block
    that no longer holds a token. (vLLM V1 instead only winds ``num_computed_tokens`` back and
    keeps the blocks for the next step's drafts.)

    Parameters
    ----------
    cache : KVCache or PagedKVCache
        Modified in place.
    num_tokens : int
        Tokens to drop, at most ``len(cache)``.

    Returns
    -------
    int
        Blocks returned to the pool (0 for a contiguous cache).

    Book: chapter "Speculative decoding and the KV cache".
    """
    if not isinstance(cache, (KVCache, PagedKVCache)):
        raise ValueError(f"expected a KVCache or PagedKVCache, got {type(cache).__name__}")
    n = num_tokens
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 0 <= n <= len(cache):
        raise ValueError(f"num_tokens must be an integer from 0 to the {len(cache)} cached tokens, got {n!r}")
    cache.length -= int(n)
    if isinstance(cache, KVCache):
        return 0
    keep = -(-cache.length // cache.pool.block_size)  # blocks still holding a token
    dropped = cache.block_table[keep:]
    for block in dropped:
        cache.pool.release(block)
    del cache.block_table[keep:]
    return len(dropped)


def ngram_propose(tokens, k, min_n, max_n):
    """Draft tokens by prompt lookup: continue the longest earlier copy of the sequence's last tokens.

    vLLM's n-gram proposer (``vllm/v1/spec_decode/ngram_proposer.py``,
    ``_find_longest_matched_ngram_and_propose_tokens``): find the longest suffix of ``tokens``
    of ``min_n`` to ``max_n`` tokens that also occurs earlier (the earliest occurrence if several),
    and propose up to ``k`` tokens that followed it. No model runs; with no match, no drafts.
    Example (vLLM's docstring): ``[1, 2, 3, 4, 2, 3]``, ``min_n = 2``, ``max_n = 3``, ``k = 4``
    gives ``[4, 2, 3]``: ``[4, 2, 3]`` never occurred before, ``[2, 3]`` did, at position 1.

    Parameters
    ----------
    tokens : sequence of int, shape (L,)
        Prompt and output so far.
    k, min_n, max_n : int
        Drafts at most; shortest and longest n-gram matched, ``1 <= min_n <= max_n``.

    Returns
    -------
    list of int, at most ``k`` long (empty when no n-gram matches).
    """
    tokens = [int(t) for t in tokens]
    k, min_n, max_n = (check_positive_int(name, v) for name, v in (("k", k), ("min_n", min_n), ("max_n", max_n)))
    if min_n > max_n:
        raise ValueError(f"min_n ({min_n}) must be at most max_n ({max_n})")
    for n in range(min(max_n, len(tokens) - 1), min_n - 1, -1):  # longest first
        suffix = tokens[-n:]
        for start in range(len(tokens) - n):  # earliest first; the suffix itself is excluded
            if tokens[start:start + n] == suffix:
                return tokens[start + n:start + n + k]
    return []


def jacobi_decode(next_tokens, prefix, guess):
    """Greedy Jacobi decoding: refine a block of guessed tokens in parallel until it stops changing.

    Santilli et al. 2023 (§3) and Fu et al. 2024 (§2) write greedy decoding of ``n`` tokens as
    the system ``y_i = argmax p(. | prefix, y_1 .. y_{i-1})``, ``i = 1 .. n``, and solve it by
    fixed-point iteration: one forward pass over ``prefix + y`` updates every ``y_i`` at once.
    After pass ``j`` the first ``j`` tokens are final (each sees only correct tokens before it),
    so the iteration reaches greedy decoding's own output in at most ``n`` passes.

    Parameters
    ----------
    next_tokens : callable
        ``next_tokens(tokens) -> sequence of int`` of the same length ``L``: the model's greedy
        next token after each position (one causal forward pass).
    prefix : sequence of int, length >= 1
    guess : sequence of int, shape (n,), n >= 1
        The initial guess for the ``n`` tokens after the prefix.

    Returns
    -------
    tokens : list of int, shape (n,)
        The fixed point: the ``n`` tokens greedy decoding gives.
    trajectory : list of list of int
        The guess before the first pass and after each pass (the n-grams lookahead decoding
        harvests come from here); ``len(trajectory) - 1`` passes were run.
    """
    prefix, y = [int(t) for t in prefix], [int(t) for t in guess]
    if not prefix or not y:
        raise ValueError(f"need a prefix and a guess of at least one token each, got {len(prefix)} and {len(y)}")
    trajectory = [list(y)]
    for _ in range(len(y)):  # at most n passes
        out = [int(t) for t in next_tokens(prefix + y)]  # (L,) greedy next token after each position
        if len(out) != len(prefix) + len(y):
            raise ValueError(f"next_tokens must return one token per position ({len(prefix) + len(y)}), got {len(out)}")
        new = out[len(prefix) - 1:len(prefix) - 1 + len(y)]  # predictions for positions of y
        trajectory.append(new)
        if new == y:
            break
        y = new
    return trajectory[-1], trajectory


def lookahead_step_tokens(window, ngram, guesses) -> int:
    """Tokens one lookahead-decoding step feeds the model besides the last token: ``(W + G)(N - 1)``.

    Fu et al. 2024 (§3): the lookahead branch keeps a window of ``W`` future positions for the
    last ``N - 1`` Jacobi iterations, ``W (N - 1)`` tokens, and the verification branch checks up
    to ``G`` cached n-grams of ``N - 1`` tokens each, all in one forward pass with one attention
    mask. (The README's example mask: 4-grams, window 5, two candidates: 15 + 6 tokens.)

    Parameters
    ----------
    window : int >= 1
        ``W``, the lookahead window.
    ngram : int >= 2
        ``N``, the n-gram size (Jacobi iterations kept).
    guesses : int >= 0
        ``G``, n-gram candidates verified per step.
    """
    w, n = check_positive_int("window", window), check_positive_int("ngram", ngram)
    if n < 2:
        raise ValueError(f"ngram (N) must be at least 2 (a 2-gram is the shortest guess), got {n}")
    if isinstance(guesses, bool) or not isinstance(guesses, numbers.Integral) or guesses < 0:
        raise ValueError(f"guesses (G) must be an integer >= 0, got {guesses!r}")
    return (w + int(guesses)) * (n - 1)


def self_speculative_speedup(alpha, k, exit_layer, num_layers) -> float:
    """Speed-up of drafting with the target's own first ``E`` of ``L`` layers (early exit, LayerSkip).

    Memory-bound model: a draft token runs layers ``1 .. E`` and the shared output head, so it
    costs ``c = E / L`` of a target step, and the step's tokens follow
    :func:`speculative_expected_tokens`. Verification still reads every layer's weights once:
    the drafts' first ``E`` layers are reused (LayerSkip's shared cache and exit activations,
    Elhoushi et al. 2024, Sec. 4), but the last draft has not been through them. So the step
    costs ``k E / L + 1``, the formula of :func:`speculative_speedup` with ``c = E / L``; the
    reuse saves compute and a second KV cache, not weight reads. (The output head's share is
    ignored.)

    Parameters
    ----------
    alpha : float in [0, 1]
        Acceptance rate of the early exit's tokens.
    k : int >= 0
    exit_layer, num_layers : int, ``1 <= exit_layer < num_layers``

    Returns
    -------
    float
        ``E[tokens] / (k E / L + 1)``.
    """
    e, n = check_positive_int("exit_layer", exit_layer), check_positive_int("num_layers", num_layers)
    if e >= n:
        raise ValueError(f"exit_layer ({e}) must be below num_layers ({n}): the draft is a strict prefix of the model")
    return speculative_speedup(alpha, k, e / n)


def goodput_draft_length(acceptance_per_pos, step_times) -> int:
    """Draft length with the most goodput: ``argmax_k (1 + sum(a[:k])) / t[k]``.

    The rule of vLLM's dynamic speculative decoding (``vllm/v1/spec_decode/dynamic/manager.py``,
    ``DynamicSpeculativeDecodingManager._compute_optimal_num_speculative_tokens``) and of SmartSpec
    (Liu et al. 2024, §4): the expected tokens a step emits, over what the step costs at the
    current batch size. ``a[i]`` is the measured rate at which the draft at position ``i + 1`` is
    accepted (accepted / drafted there, so it already includes the earlier ones' acceptance);
    with one rate ``alpha`` everywhere ``a[i] = alpha^(i+1)`` and the numerator is
    :func:`speculative_expected_tokens`. Ties go to the shorter draft.

    Parameters
    ----------
    acceptance_per_pos : sequence of float in [0, 1], shape (K,)
    step_times : sequence of float > 0, shape (K + 1,)
        Time of a step that verifies ``k = 0 .. K`` drafts per sequence (draft time included).

    Returns
    -------
    int in [0, K]
    """
    rates = np.asarray(acceptance_per_pos, dtype=np.float64)  # (K,)
    times = np.asarray(step_times, dtype=np.float64)  # (K + 1,)
    if rates.ndim != 1 or not np.isfinite(rates).all() or ((rates < 0) | (rates > 1)).any():
        raise ValueError(f"acceptance_per_pos must be a 1-D sequence of rates in [0, 1], got {acceptance_per_pos!r}")
    if times.shape != (rates.size + 1,) or not np.isfinite(times).all() or (times <= 0).any():
        raise ValueError(f"step_times must hold {rates.size + 1} finite times > 0 (k = 0 .. {rates.size}), "
                         f"got {step_times!r}")
    goodput = (1 + np.concatenate([[0.0], np.cumsum(rates)])) / times  # (K + 1,) tokens per unit time
    return int(np.argmax(goodput))  # the first maximum: the shorter draft on a tie
