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


def multi_model_batches(arrivals, batch_seconds, max_batch, max_wait, policy="edf") -> dict:
    """Latencies of several models' requests sharing one GPU, each model with its own batch queue.

    A model's queue is ready when it holds ``max_batch`` requests or its oldest has waited
    ``max_wait[model]`` seconds (size or timeout). When the GPU is free it runs one ready queue's
    batch (at most ``max_batch`` oldest requests) for ``batch_seconds(b)``: ``policy="longest"`` takes
    the queue holding most requests, ``"edf"`` the one whose oldest request arrived first.

    Parameters
    ----------
    arrivals : dict of str to sequence of float, each sorted
        Arrival times of each model's requests.

    Returns
    -------
    dict of str to np.ndarray, shape (len(arrivals[model]),)
        Each request's latency, finish minus arrival, in arrival order.
    """
    if policy not in ("edf", "longest") or set(max_wait) != set(arrivals):
        raise ValueError(f"policy must be 'edf' or 'longest' and max_wait must name every model, got {policy!r}, "
                         f"{sorted(max_wait)} for {sorted(arrivals)}")
    max_batch = check_positive_int("max_batch", max_batch)
    times = {m: np.asarray(a, dtype=float) for m, a in arrivals.items()}
    done = {m: np.zeros(len(a)) for m, a in times.items()}
    head, tail, t = dict.fromkeys(times, 0), dict.fromkeys(times, 0), 0.0  # queue m = times[m][head:tail]
    while any(head[m] < len(times[m]) for m in times):
        for m in times:  # admit everything that has arrived by t
            tail[m] = int(np.searchsorted(times[m], t, side="right"))
        ready = [m for m in times if tail[m] - head[m] >= max_batch
                 or (tail[m] > head[m] and t >= times[m][head[m]] + max_wait[m])]
        if not ready:  # idle until the next arrival or the next timeout
            t = min([times[m][tail[m]] for m in times if tail[m] < len(times[m])]
                    + [times[m][head[m]] + max_wait[m] for m in times if tail[m] > head[m]])
            continue
        pick = (max(ready, key=lambda m: tail[m] - head[m]) if policy == "longest"
                else min(ready, key=lambda m: times[m][head[m]]))
        b = min(max_batch, tail[pick] - head[pick])
        t += batch_seconds(b)
        done[pick][head[pick]:head[pick] + b] = t
        head[pick] += b
    return {m: done[m] - times[m] for m in times}


__all__ = ["conversation_prefill_tokens", "multi_model_batches", "replica_request_rate"]
