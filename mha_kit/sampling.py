"""From logits to a token: the sampler of a serving engine, batched, in numpy.

Every function works on a batch of rows at once, ``logits`` of shape ``(b, V)`` with one row per
sequence and one parameter per row (``temperature``, ``top_k``, ``top_p``, ``min_p``, penalties),
the way vLLM's V1 sampler keeps one tensor per sampling parameter in ``SamplingMetadata`` and never
loops over requests in Python. Masked tokens get ``-inf``, so the softmax gives them probability 0.

The order is vLLM's (``vllm/v1/sample/sampler.py``, ``Sampler.forward`` and ``Sampler.sample``):
penalties on the raw logits, greedy rows take the argmax there, then temperature, min-p, top-k and
top-p, softmax, and a draw by the exponential race ``argmax(p / E)``, ``E ~ Exp(1)``
(``vllm/v1/sample/ops/topk_topp_sampler.py``, ``random_sample``).

Also here: the grammar bitmask of structured output (xgrammar's packing, 32 tokens per int32), the
token-level index of a character automaton (Outlines), a chunked float32 sum for the
reduction-order argument, beam search on a toy model, and the acceptance rate of speculative
sampling.

Book: chapter "Decoding and sampling".
"""
from __future__ import annotations

import numbers

import numpy as np

from .attention import softmax


def _rows(logits):
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[1] == 0:
        raise ValueError(f"expected logits of shape (b, V) with V >= 1, got {logits.shape}")
    return logits


def _per_row(name, values, b, low, high, low_open=False):
    """One parameter per row, as a float array of shape (b,), checked against its range."""
    values = np.broadcast_to(np.asarray(values, dtype=np.float64), (b,))
    below = values <= low if low_open else values < low
    if not np.isfinite(values).all() or below.any() or (values > high).any():
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must lie in {bracket}{low}, {high}] for every row, got {values.tolist()}")
    return values


def apply_temperature(logits, temperature):
    """Divide each row by its temperature; rows with ``T = 0`` (greedy) are left as they are.

    ``softmax(z / T)``: ``T < 1`` sharpens the distribution, ``T > 1`` flattens it, and the argmax
    never moves. vLLM replaces ``T < 1e-5`` by 1 before dividing, because those rows take the
    argmax path anyway (``Sampler.apply_temperature``).

    Parameters
    ----------
    logits : ndarray, shape (b, V)
    temperature : float or ndarray, shape (b,), each >= 0

    Returns
    -------
    ndarray, shape (b, V)
    """
    logits = _rows(logits)
    t = _per_row("temperature", temperature, logits.shape[0], 0.0, np.inf)
    return logits / np.where(t < 1e-5, 1.0, t)[:, None]  # (b, V) / (b, 1)


def min_p_mask(logits, min_p):
    """Keep the tokens whose probability is at least ``min_p`` times the row's largest.

    Nguyen et al. 2024: the threshold ``p_min * p_max`` scales with the model's confidence.
    ``min_p = 0`` keeps everything (vLLM's ``MinPLogitsProcessor.apply``).

    Parameters
    ----------
    logits : ndarray, shape (b, V)
    min_p : float or ndarray, shape (b,), each in [0, 1]

    Returns
    -------
    ndarray, shape (b, V): the logits, ``-inf`` where masked.
    """
    logits = _rows(logits)
    m = _per_row("min_p", min_p, logits.shape[0], 0.0, 1.0)
    probs = softmax(logits, axis=-1)  # (b, V)
    return np.where(probs < m[:, None] * probs.max(axis=-1, keepdims=True), -np.inf, logits)


def top_k_top_p_mask(logits, top_k, top_p):
    """vLLM's ``apply_top_k_top_p``: keep the ``k`` largest logits, then the nucleus of mass ``p``.

    On the logits sorted in ascending order: top-k masks everything below the ``k``-th largest
    (ties with it survive); top-p takes the softmax of what is left and masks the tokens whose
    cumulative probability, counted from the smallest, is at most ``1 - p``, always keeping the
    largest. ``top_k = V`` and ``top_p = 1`` switch a row's filter off.

    Parameters
    ----------
    logits : ndarray, shape (b, V)
    top_k : int or ndarray of int, shape (b,), each in [1, V]
    top_p : float or ndarray, shape (b,), each in (0, 1]

    Returns
    -------
    ndarray, shape (b, V): the logits, ``-inf`` where masked.
    """
    logits = _rows(logits)
    b, vocab = logits.shape
    k = _per_row("top_k", top_k, b, 1, vocab)
    if (k != np.floor(k)).any():
        raise ValueError(f"top_k must be a whole number of tokens in every row, got {k.tolist()}")
    k = k.astype(np.int64)
    p = _per_row("top_p", top_p, b, 0.0, 1.0, low_open=True)
    order = np.argsort(logits, axis=-1, kind="stable")  # (b, V), ascending
    ranked = np.take_along_axis(logits, order, axis=-1)  # (b, V)
    kth = ranked[np.arange(b), vocab - k][:, None]  # (b, 1): the k-th largest logit
    ranked = np.where(ranked < kth, -np.inf, ranked)
    below = np.cumsum(softmax(ranked, axis=-1), axis=-1) <= 1 - p[:, None]  # (b, V)
    below[:, -1] = False  # the largest logit always survives
    ranked = np.where(below, -np.inf, ranked)
    out = np.empty_like(ranked)
    np.put_along_axis(out, order, ranked, axis=-1)  # undo the sort
    return out


def _token_counts(token_lists, b, vocab):
    """Counts of each token id per row, shape (b, V), from ``b`` lists of ids."""
    if len(token_lists) != b:
        raise ValueError(f"expected {b} token lists, one per row, got {len(token_lists)}")
    counts = np.zeros((b, vocab + 1), dtype=np.int64)  # one spare column for the padding id V
    width = max((len(t) for t in token_lists), default=0)
    padded = np.full((b, max(width, 1)), vocab, dtype=np.int64)  # (b, longest), padded with V
    for row, tokens in enumerate(token_lists):
        padded[row, : len(tokens)] = tokens
    if ((padded < 0) | (padded > vocab)).any():
        raise ValueError(f"token ids must lie in [0, {vocab})")
    np.add.at(counts, (np.arange(b)[:, None], padded), 1)  # scatter-add, like vLLM's bin counts
    return counts[:, :vocab]


def apply_penalties(logits, prompt_tokens, output_tokens, repetition=1.0, frequency=0.0, presence=0.0):
    """Repetition (CTRL, multiplicative), frequency and presence (OpenAI, additive) penalties.

    As ``vllm/model_executor/layers/utils.py``, ``apply_penalties``: the repetition penalty
    ``r`` applies to every token seen in the prompt *or* the output, dividing a positive logit by
    ``r`` and multiplying a negative one by ``r``; then ``z -= frequency * count_out`` and
    ``z -= presence * [count_out > 0]``, counting the output tokens only.

    Parameters
    ----------
    logits : ndarray, shape (b, V)
    prompt_tokens, output_tokens : list of b lists of int
    repetition : float or ndarray, shape (b,), each > 0 (1 is off)
    frequency, presence : float or ndarray, shape (b,), each in [-2, 2] (0 is off)

    Returns
    -------
    ndarray, shape (b, V)
    """
    logits = _rows(logits)
    b, vocab = logits.shape
    r = _per_row("repetition", repetition, b, 0.0, np.inf, low_open=True)[:, None]  # (b, 1)
    f = _per_row("frequency", frequency, b, -2.0, 2.0)[:, None]
    pr = _per_row("presence", presence, b, -2.0, 2.0)[:, None]
    seen_out = _token_counts(output_tokens, b, vocab)  # (b, V)
    seen = (_token_counts(prompt_tokens, b, vocab) > 0) | (seen_out > 0)
    scale = np.where(seen, np.where(logits > 0, 1 / r, r), 1.0)
    return logits * scale - f * seen_out - pr * (seen_out > 0)


def exponential_race(probs, noise):
    """``argmax(p / E)`` per row: a draw from ``p`` given ``E ~ Exp(1)`` i.i.d. (vLLM's ``random_sample``).

    ``P(argmax_i p_i / E_i = j) = p_j``, because ``E_i / p_i`` is exponential with rate ``p_i``
    and the smallest of independent exponentials is the one with rate ``p_j`` with probability
    ``p_j / sum p``. No cumulative sum and no host synchronisation, unlike ``multinomial``.

    Parameters
    ----------
    probs : ndarray, shape (b, V), rows summing to 1
    noise : ndarray, shape (b, V), positive: the exponential draws

    Returns
    -------
    ndarray of int, shape (b,)
    """
    probs, noise = np.asarray(probs, dtype=np.float64), np.asarray(noise, dtype=np.float64)
    if probs.ndim != 2 or noise.shape != probs.shape or (noise <= 0).any():
        raise ValueError(f"expected probs of shape (b, V) and positive noise of the same shape, "
                         f"got {probs.shape} and {noise.shape}")
    return np.argmax(probs / noise, axis=-1)


def sample_tokens(logits, temperature, top_k, top_p, min_p, rng, seeds=None):
    """One sampling step for a batch, in vLLM's order, with one parameter per row.

    Greedy rows (``T < 1e-5``) take the argmax of ``logits``; the others go through temperature,
    min-p, top-k and top-p, the softmax and :func:`exponential_race`. Penalties and grammar masks,
    when used, are applied to ``logits`` before the call.

    Parameters
    ----------
    logits : ndarray, shape (b, V)
    temperature, top_k, top_p, min_p : scalars or ndarrays of shape (b,)
    rng : numpy.random.Generator
        The batch's shared generator, for rows without a seed.
    seeds : sequence of (int or None), length b, optional
        A row with a seed draws its noise from its own generator, so its tokens do not depend on
        the rest of the batch (vLLM keeps one ``torch.Generator`` per seeded request).

    Returns
    -------
    ndarray of int, shape (b,)
    """
    logits = _rows(logits)
    b = logits.shape[0]
    greedy = _per_row("temperature", temperature, b, 0.0, np.inf) < 1e-5  # (b,)
    scaled = min_p_mask(apply_temperature(logits, temperature), min_p)
    probs = softmax(top_k_top_p_mask(scaled, top_k, top_p), axis=-1)  # (b, V)
    noise = rng.exponential(size=probs.shape)  # (b, V)
    for row, seed in enumerate(seeds or ()):
        if seed is not None:
            noise[row] = np.random.default_rng(seed).exponential(size=probs.shape[1])
    return np.where(greedy, np.argmax(logits, axis=-1), exponential_race(probs, noise))


def pack_token_bitmask(allowed):
    """Pack a boolean mask of allowed tokens into int32 words, 32 tokens per word (xgrammar's layout).

    Bit ``j`` of word ``i`` is token ``32 i + j``; a set bit means allowed, so a word of ``-1``
    (all bits set) allows all 32 tokens, the value vLLM fills rows without a grammar with.

    Parameters
    ----------
    allowed : ndarray of bool, shape (b, V)

    Returns
    -------
    ndarray of int32, shape (b, ceil(V / 32))
    """
    allowed = np.asarray(allowed)
    if allowed.ndim != 2 or allowed.dtype != bool:
        raise ValueError(f"expected a boolean mask of shape (b, V), got {allowed.dtype} {allowed.shape}")
    b, vocab = allowed.shape
    words = -(-vocab // 32)
    bits = np.zeros((b, words * 32), dtype=np.uint64)
    bits[:, :vocab] = allowed
    bits = bits.reshape(b, words, 32) << np.arange(32, dtype=np.uint64)  # (b, words, 32)
    return bits.sum(axis=-1).astype(np.uint32).view(np.int32)  # (b, words)


def apply_token_bitmask(logits, bitmask):
    """Set the logits of tokens whose bit is clear to ``-inf`` (xgrammar's ``apply_token_bitmask_inplace``).

    Parameters
    ----------
    logits : ndarray, shape (b, V)
    bitmask : ndarray of int32, shape (b, ceil(V / 32))

    Returns
    -------
    ndarray, shape (b, V)
    """
    logits = _rows(logits)
    b, vocab = logits.shape
    bitmask = np.asarray(bitmask)
    if bitmask.shape != (b, -(-vocab // 32)) or bitmask.dtype != np.int32:
        raise ValueError(f"expected an int32 bitmask of shape ({b}, {-(-vocab // 32)}), "
                         f"got {bitmask.dtype} {bitmask.shape}")
    words = bitmask.view(np.uint32).astype(np.uint64)[:, :, None]  # (b, words, 1)
    bits = (words >> np.arange(32, dtype=np.uint64)) & 1  # (b, words, 32)
    allowed = bits.reshape(b, -1)[:, :vocab].astype(bool)
    return np.where(allowed, logits, -np.inf)


def token_index(transitions, vocab, states):
    """For each automaton state, the tokens it allows and the state each leads to (Outlines' index).

    A token of several characters is allowed in state ``s`` when the character automaton can read
    all its characters from ``s``; the walk is done once per (state, token), before generation,
    so that a decoding step only looks up ``index[state]``. Willard and Louf 2023, §3.

    Parameters
    ----------
    transitions : dict mapping (state, character) to the next state
    vocab : sequence of str, the tokens' text, token id = position
    states : iterable of hashable states

    Returns
    -------
    dict mapping each state to a dict {token id: state after the token}
    """
    index = {}
    for state in states:
        index[state] = {}
        for token_id, text in enumerate(vocab):
            if not isinstance(text, str) or not text:
                raise ValueError(f"token {token_id} must be a non-empty string, got {text!r}")
            s = state
            for char in text:
                s = transitions.get((s, char))
                if s is None:
                    break
            else:
                index[state][token_id] = s
    return index


def chunked_sum(values, num_chunks):
    """Sum in float32 the way a split reduction does: ``num_chunks`` partial sums, then their sum.

    Each chunk is summed left to right, and the partial sums are added left to right; the result
    depends on ``num_chunks`` because float32 addition is not associative. A kernel that picks its
    split from the batch size (split-K matmul, Flash-Decoding's KV splits) therefore gives a
    request slightly different numbers in a different batch.

    Parameters
    ----------
    values : ndarray, shape (n,)
    num_chunks : int in [1, n]

    Returns
    -------
    numpy.float32
    """
    values = np.asarray(values, dtype=np.float32)
    n = values.shape[0] if values.ndim == 1 else 0
    if values.ndim != 1 or isinstance(num_chunks, bool) or not isinstance(num_chunks, numbers.Integral) \
            or not 1 <= num_chunks <= max(n, 1):
        raise ValueError(f"need a 1-D array and num_chunks in [1, n = {n}], got shape {values.shape} "
                         f"and num_chunks = {num_chunks!r}")
    total = np.float32(0)
    for chunk in np.array_split(values, int(num_chunks)):
        partial = np.float32(0)
        for v in chunk:
            partial = np.float32(partial + v)
        total = np.float32(total + partial)
    return total


def beam_search(log_probs, start, beam_width, max_len, eos, length_alpha=0.0):
    """Beam search on a next-token table: the ``beam_width`` best prefixes by summed log-probability.

    Finished hypotheses (ending in ``eos``) leave the beam; the result is the best of them and of
    the beam at ``max_len`` by ``score / len ** length_alpha`` (``length_alpha = 0``: the raw sum,
    which favours short outputs; 1: the mean log-probability per token).

    Parameters
    ----------
    log_probs : ndarray, shape (V, V)
        ``log_probs[a, c]`` = log P(next = c | last = a): a bigram model.
    start, eos : int
    beam_width, max_len : int >= 1
    length_alpha : float >= 0

    Returns
    -------
    (list of int, float): the tokens after ``start`` and their summed log-probability.
    """
    table = np.asarray(log_probs, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1] or min(beam_width, max_len) < 1 or length_alpha < 0:
        raise ValueError(f"need a square (V, V) table, beam_width and max_len >= 1 and length_alpha >= 0, got "
                         f"{table.shape}, {beam_width}, {max_len}, {length_alpha}")
    beam, done = [((start,), 0.0)], []
    for _ in range(max_len):
        grown = [(seq + (c,), score + table[seq[-1], c]) for seq, score in beam for c in range(table.shape[1])]
        grown.sort(key=lambda item: -item[1])
        beam = []
        for seq, score in grown[: beam_width]:
            (done if seq[-1] == eos else beam).append((seq, score))
        if not beam:
            break
    best = max(done + beam, key=lambda item: item[1] / (len(item[0]) - 1) ** length_alpha)
    return list(best[0][1:]), float(best[1])


def acceptance_rate(target_probs, draft_probs):
    """``alpha = sum_x min(p(x), q(x))`` per row: the chance that speculative sampling accepts a draft token.

    Leviathan et al. 2023, Corollary 3.6: ``alpha = E[sum_x min(p(x), q(x))] = 1 - E[TV(p, q)]``.

    Parameters
    ----------
    target_probs, draft_probs : ndarray, shape (b, V), rows summing to 1

    Returns
    -------
    ndarray, shape (b,)
    """
    p, q = np.asarray(target_probs, dtype=np.float64), np.asarray(draft_probs, dtype=np.float64)
    if p.ndim != 2 or p.shape != q.shape:
        raise ValueError(f"expected target and draft probabilities of the same shape (b, V), got {p.shape} and {q.shape}")
    if (p < 0).any() or (q < 0).any() or (np.abs(p.sum(-1) - 1) > 1e-6).any() or (np.abs(q.sum(-1) - 1) > 1e-6).any():
        raise ValueError("every row of target_probs and draft_probs must be a distribution: >= 0, summing to 1")
    return np.minimum(p, q).sum(axis=-1)


def gnmt_length_penalty(length, alpha):
    """GNMT's length normaliser ``lp(Y) = (5 + |Y|)**alpha / (5 + 1)**alpha`` (Wu et al. 2016, sec. 7).

    A beam's score is ``log P(Y | X) / lp(Y)``: ``alpha = 0`` is the raw sum, larger ``alpha``
    favours longer outputs; the constant 5 softens the penalty for short outputs.

    Parameters
    ----------
    length : int or ndarray of int >= 1
        Tokens in the hypothesis ``|Y|``.
    alpha : float >= 0

    Returns
    -------
    float or ndarray of float, shape of ``length``

    Book: chapter "Decoding and sampling".
    """
    length = np.asarray(length)
    if np.any(length < 1) or alpha < 0:
        raise ValueError(f"length must be >= 1 and alpha >= 0, got {length} and {alpha}")
    return ((5.0 + length) / 6.0) ** alpha


def beam_search_stopping(log_probs, start, beam_width, max_len, eos, length_penalty=1.0, early_stopping=False):
    """Beam search that keeps finished hypotheses apart and stops by Hugging Face's three rules.

    Each step grows every open beam by every token and keeps the ``2 * beam_width`` best by summed
    log-probability; a candidate ending in ``eos`` among the first ``beam_width`` joins the finished
    list (the best ``beam_width`` kept by ``score / length ** length_penalty``), the others stay open.
    Once ``beam_width`` hypotheses are finished: ``early_stopping=True`` stops at once; ``False``
    stops when the best open score divided by the *current* length cannot beat the worst finished
    one; ``"never"`` divides by ``max_len`` instead (for ``length_penalty > 0``), a true bound.

    Returns
    -------
    (list of int, float, int): the best hypothesis's tokens after ``start``, its summed
    log-probability, and the step at which the search stopped.

    Book: chapter "Decoding and sampling".
    """
    table = np.asarray(log_probs, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1] or min(beam_width, max_len) < 1:
        raise ValueError(f"need a square (V, V) table and beam_width, max_len >= 1, got {table.shape}, "
                         f"{beam_width}, {max_len}")
    if early_stopping not in (True, False, "never"):
        raise ValueError(f"early_stopping must be True, False or 'never', got {early_stopping!r}")
    norm = lambda item: item[1] / (len(item[0]) - 1) ** length_penalty  # noqa: E731
    beam, done, step = [((start,), 0.0)], [], 0
    while beam and step < max_len:
        step += 1
        grown = sorted(((seq + (c,), s + table[seq[-1], c]) for seq, s in beam for c in range(table.shape[1])
                        if np.isfinite(table[seq[-1], c])), key=lambda item: -item[1])[: 2 * beam_width]
        done = sorted(done + [g for g in grown[:beam_width] if g[0][-1] == eos], key=norm)[-beam_width:]
        beam = [g for g in grown if g[0][-1] != eos][:beam_width]
        if len(done) == beam_width and beam:
            bound_len = max_len if early_stopping == "never" and length_penalty > 0 else step
            if early_stopping is True or beam[0][1] / bound_len ** length_penalty <= norm(done[0]):
                break
    best = max(done + (beam if step == max_len else []), key=norm)
    return list(best[0][1:]), float(best[1]), step


def typical_mask(logits, mass):
    """Locally typical sampling: keep the tokens whose surprise is closest to the entropy.

    Meister et al. (2023, §4): sort tokens by ``|-log p_i - H(p)|`` and keep the smallest such set
    whose probability adds up to at least ``mass`` (Hugging Face's ``TypicalLogitsWarper``).

    Parameters
    ----------
    logits : array_like, shape (b, V)
    mass : float in (0, 1], one per row or one for all

    Returns
    -------
    ndarray, shape (b, V): the logits, ``-inf`` outside the typical set.
    """
    logits = _rows(logits)
    mass = _per_row("mass", mass, logits.shape[0], 0.0, 1.0, low_open=True)
    logp = np.log(softmax(logits, axis=-1))  # (b, V)
    p = np.exp(logp)
    entropy = -(p * np.where(p > 0, logp, 0.0)).sum(axis=-1, keepdims=True)  # (b, 1)
    order = np.argsort(np.abs(-logp - entropy), axis=-1, kind="stable")  # most typical first
    cum = np.cumsum(np.take_along_axis(p, order, axis=-1), axis=-1)  # (b, V)
    keep_sorted = (cum - np.take_along_axis(p, order, axis=-1)) < mass[:, None]  # mass before token < mass
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    return np.where(keep, logits, -np.inf)


def mirostat_v2_step(logits, mu, tau, eta, u):
    """One step of Mirostat 2.0 as llama.cpp runs it, for one row of logits.

    Drop the tokens whose surprise ``-log2 p`` exceeds ``mu`` (keeping at least the top one),
    renormalise, draw with the uniform number ``u``, then move ``mu`` against the error:
    ``mu <- mu - eta * (surprise(token) - tau)`` (Basu et al. 2021, §4 for the feedback loop).

    Parameters
    ----------
    logits : array_like, shape (V,)
    mu, tau : float, bits; llama.cpp starts at ``mu = 2 * tau``
    eta : float > 0, the learning rate
    u : float in [0, 1), the uniform draw

    Returns
    -------
    (token, surprise, new_mu, kept) : int, float, float, int
    """
    if not (eta > 0 and tau > 0 and 0 <= u < 1):
        raise ValueError(f"need eta > 0, tau > 0 and 0 <= u < 1, got eta={eta}, tau={tau}, u={u}")
    p = softmax(_rows(np.atleast_2d(logits)), axis=-1)[0]  # (V,)
    keep = -np.log2(p) <= mu
    keep[np.argmax(p)] = True
    q = np.where(keep, p, 0.0) / p[keep].sum()
    token = int(np.searchsorted(np.cumsum(q), u, side="right"))
    surprise = float(-np.log2(q[token]))
    return token, surprise, float(mu - eta * (surprise - tau)), int(keep.sum())


def cfg_logits(cond, uncond, scale):
    """Classifier-free guidance for a language model: ``uncond + scale * (cond - uncond)``.

    Sanchez et al. (2023, §2): the guided next-token log-probabilities from two forward passes,
    one with the prompt's condition and one without. ``scale = 1`` gives ``cond`` back.

    Parameters
    ----------
    cond, uncond : array_like, shape (b, V), log-probabilities (or logits) of the two passes
    scale : float >= 0, the guidance strength gamma

    Returns
    -------
    ndarray, shape (b, V)
    """
    cond, uncond = _rows(cond), _rows(uncond)
    if cond.shape != uncond.shape or not scale >= 0:
        raise ValueError(f"cond and uncond must have one shape and scale >= 0, got {cond.shape}, "
                         f"{uncond.shape}, scale={scale}")
    return uncond + scale * (cond - uncond)


def token_healing_mask(vocab, prefix):
    """Token healing's constraint: the tokens whose text starts with ``prefix``.

    The prompt's last token is removed and its text ``prefix`` becomes a constraint on the
    first generated token (guidance's README, "Token healing").

    Parameters
    ----------
    vocab : sequence of str, the token texts, index = token id
    prefix : str, non-empty

    Returns
    -------
    ndarray of bool, shape (V,)
    """
    if not prefix:
        raise ValueError("prefix must be a non-empty string, got ''")
    return np.array([text.startswith(prefix) for text in vocab], dtype=bool)
