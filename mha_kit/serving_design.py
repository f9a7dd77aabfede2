"""Serving-design arithmetic: a growing conversation's prefill, and a replica's request rate.

>>> conversation_prefill_tokens(4, 100).tolist()  # prefix cache on: each turn prefills its new tokens
[100, 100, 100, 100]
>>> conversation_prefill_tokens(4, 100, cached=False).tolist()  # no cache: the whole history every turn
[100, 200, 300, 400]

Book: chapters "Prefix caching in depth" and "Overload, failures and rollouts".
"""

import numpy as np

from .disaggregation import prefill_seconds
from .policy import max_concurrent_sequences
from .scheduling import roofline_step
from .config import check_positive_int


def conversation_prefill_tokens(turns, tokens_per_turn, window=None, *, cached=True, compact_to=None,
                                pinned=0) -> np.ndarray:
    """Tokens each turn of a chat must prefill when every request resends the whole history.

    Turn ``i`` (1-based) adds ``tokens_per_turn`` tokens (the user's message and the answer before
    it, lumped), so its prompt holds ``i * tokens_per_turn``. With ``cached`` the earlier turns'
    blocks are found by prefix caching and only the new tokens are computed; without, everything is.
    A ``window`` caps the prompt: when a turn would pass it, the oldest turns are dropped until the
    prompt is at most ``compact_to`` (default: the window, a sliding window), in whole turns. Dropping
    changes the prompt's beginning, so every token after the ``pinned`` ones (a system prompt kept
    first) misses the cache and is prefilled again on that turn.

    Returns
    -------
    np.ndarray, shape (turns,), int64
        Prefill tokens of each turn.
    """
    turns, per_turn = check_positive_int("turns", turns), check_positive_int("tokens_per_turn", tokens_per_turn)
    keep = window if compact_to is None else compact_to
    if window is not None and not (per_turn <= keep <= window and 0 <= pinned < per_turn):
        raise ValueError(f"need tokens_per_turn <= compact_to <= window and 0 <= pinned < tokens_per_turn, got "
                         f"{per_turn}, {keep}, {window}, {pinned}")
    out, context = np.zeros(turns, dtype=np.int64), 0
    for i in range(turns):
        context += per_turn
        if window is not None and context > window:
            context = keep // per_turn * per_turn  # the newest whole turns
            out[i] = context - pinned  # the prefix changed: all but the pinned tokens miss
        else:
            out[i] = per_turn if cached else context
    return out


def replica_request_rate(facts, gpu, prompt_tokens, output_tokens, max_seqs=256, memory_fraction=0.9) -> tuple:
    """Requests a second one replica sustains, decode-bound, at a given prompt and output length.

    The batch is the sequences of ``prompt_tokens + output_tokens`` whose cache fits
    (:func:`mha_kit.max_concurrent_sequences`), at most ``max_seqs``; a decode step of that batch, each
    sequence half-way through its answer, lasts ``t`` by :func:`mha_kit.roofline_step`. A request then
    costs its prefill at the GPU's peak plus ``output_tokens * t / batch`` of decode time.

    Returns
    -------
    tuple
        ``(batch, t, requests_per_second)``: concurrency, seconds per decode step (the TPOT), rate.
    """
    prompt, out = check_positive_int("prompt_tokens", prompt_tokens), check_positive_int("output_tokens", output_tokens)
    fits = max_concurrent_sequences(facts, gpu, prompt + out, memory_fraction)
    batch = min(check_positive_int("max_seqs", max_seqs), fits)
    if batch < 1:
        raise ValueError(f"not one sequence of {prompt + out} tokens fits beside {facts.name}'s weights on {gpu.title}")
    step = roofline_step(facts, gpu)(0, batch, batch * (prompt + out // 2))
    per_request = prefill_seconds(facts, prompt, gpu.bf16_flops) + out * step / batch
    return batch, step, 1.0 / per_request


__all__ = ["conversation_prefill_tokens", "replica_request_rate"]
