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
