"""Best-of-N and self-consistency at serving time: N samples of one prompt on a roofline.

The prompt is prefilled once and its full blocks are shared by the N samples; each sample decodes
its own tokens, and all N run in the same decode steps. Each step reads the weights once, and the
keys and values of every sample's history: the prompt's N times with ordinary attention, once with
cascade attention, which computes the shared prefix's part for all N queries together.

Book: chapter "The KV cache from zero", section "Best-of-N".
"""
from __future__ import annotations

from dataclasses import dataclass

from .config import check_positive_int
from .roofline import roofline_seconds
from .scheduling import RooflineStep


@dataclass(frozen=True)
class BestOfN:
    """Floors for N samples of one prompt (seconds; tokens)."""

    prefill_s: float  # the prompt, once
    decode_s: float  # answer_len decode steps of N sequences
    output_tokens: int  # N * answer_len


def best_of_n_time(step, prompt_len, answer_len, n, cascade=False) -> BestOfN:
    """Prefill and decode floors of ``n`` samples of ``answer_len`` tokens after a shared prompt.

    Parameters
    ----------
    step : RooflineStep
        ``mk.roofline_step(facts, gpu)``: weight bytes, cache bytes and FLOPs per token, peaks.
    prompt_len, answer_len, n : int
        Prompt tokens, tokens per sample, samples.
    cascade : bool
        Read the shared prompt's keys and values once per step (cascade attention) instead of once
        per sample. The attention FLOPs are the same either way: every query still scores every key.
    """
    if not isinstance(step, RooflineStep):
        raise ValueError(f"step must be a RooflineStep (mk.roofline_step(...)), got {type(step).__name__}")
    prompt, answer, n = (check_positive_int(k, v) for k, v in
                         (("prompt_len", prompt_len), ("answer_len", answer_len), ("n", n)))
    decode = 0.0
    for t in range(answer):  # step t: each sample has prompt + t tokens cached
        read = (prompt if cascade else n * prompt) + n * t  # cached tokens whose K and V are read
        nbytes = step.weight_bytes + step.kv_bytes_per_token * (read + n)
        flops = step.flops_per_token * n + step.flops_per_cached_token * n * (prompt + t)
        decode += roofline_seconds(nbytes, flops, step.bandwidth, step.flop_rate)
    return BestOfN(step(prompt, 0, 0), decode, n * answer)
