"""Compiled back-ends: the shape buckets a TPU engine compiles, and what padding to them costs.

XLA compiles one program per input shape, so vLLM's TPU runner pads each step's token count up to
the next of a fixed list of sizes and compiles every size at start-up (``get_token_paddings`` in the
TPU runner's utilities: powers of two from 16, or doubling up to ``VLLM_TPU_BUCKET_PADDING_GAP`` and
then steps of that gap).

Book: chapter "CUDA for inference engineers", section on VLIW and systolic back-ends.
"""
from __future__ import annotations

import bisect

from .config import check_positive_int


def tpu_token_paddings(min_tokens, max_tokens, gap=0) -> list[int]:
    """The token-count buckets vLLM's TPU runner compiles, smallest first.

    ``gap == 0``: ``min_tokens`` doubled until a bucket reaches ``max_tokens``. Otherwise: doubled
    while at most ``gap``, then grown by ``gap`` until a bucket reaches ``max_tokens`` (the source's
    rule, including its step back to the last power of two not above ``gap``).

    Parameters
    ----------
    min_tokens : int, a power of two
    max_tokens : int
    gap : int, >= 0

    Returns
    -------
    list of int, increasing; the last one is at least ``max_tokens``
    """
    lo, hi = check_positive_int("min_tokens", min_tokens), check_positive_int("max_tokens", max_tokens)
    if lo & (lo - 1):
        raise ValueError(f"min_tokens must be a power of two, got {lo}")
    if gap != 0:
        check_positive_int("gap", gap)
    sizes, num = [], lo
    if gap == 0:
        while True:
            sizes.append(num)
            if num >= hi:
                return sizes
            num *= 2
    while num <= gap:
        sizes.append(num)
        num *= 2
    num //= 2
    while num < hi:
        num += gap
        sizes.append(num)
    return sizes


def padded_tokens(num_tokens, paddings) -> int:
    """The bucket a step of ``num_tokens`` runs as: the smallest padding that holds it."""
    n = check_positive_int("num_tokens", num_tokens)
    i = bisect.bisect_left(paddings, n)
    if i == len(paddings):
        raise ValueError(f"num_tokens {n} exceeds the largest bucket {paddings[-1]}")
    return paddings[i]
