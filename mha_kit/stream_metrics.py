"""Streaming latency metrics as benchmark tools compute them: TPOT per request, ITL per chunk gap.

vLLM's ``vllm bench serve`` (``calculate_metrics`` in vllm/benchmarks/serve.py) gives each request one
TPOT, ``(latency - TTFT) / (output tokens - 1)``, and pools every gap between streamed chunks into its
ITL list. NVIDIA AIPerf calls the per-request quantity ITL and the pooled chunk gaps ICL. The two
means differ whenever answers differ in length (a request-weighted mean against a gap-weighted one)
or a chunk carries several tokens (speculative decoding, detokeniser buffering).

Book: chapter "Serving in production", section "Two tools, two TPOTs".
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class StreamStats(NamedTuple):
    """Means over a run, in the unit of the input times.

    ``tpot``: mean over requests of ``(last chunk - first chunk) / (tokens - 1)`` (vLLM's TPOT,
    AIPerf's ITL); ``chunk_gap``: mean of every gap between consecutive chunks, pooled over requests
    (vLLM's ITL, AIPerf's ICL); ``token_gap``: total decode time over total tokens after the first
    (the token-weighted mean); ``ttft``: mean time from send to the first chunk.
    """

    ttft: float
    tpot: float
    chunk_gap: float
    token_gap: float


def stream_stats(requests) -> StreamStats:
    """The four latency means of a set of streamed requests.

    Parameters
    ----------
    requests : sequence of (send_time, chunk_times, chunk_tokens)
        ``chunk_times``: arrival time of each streamed chunk, increasing, shape ``(c,)``;
        ``chunk_tokens``: tokens in each chunk, shape ``(c,)``. Each request needs at least two
        chunks and two tokens (one gap after the first token).

    Returns
    -------
    StreamStats
    """
    if len(requests) == 0:
        raise ValueError("stream_stats needs at least one request, got 0")
    ttft, tpot, gaps, decode, tokens = [], [], [], 0.0, 0
    for send, times, counts in requests:
        times, counts = np.asarray(times, dtype=float), np.asarray(counts)
        if times.shape != counts.shape or times.size < 2 or np.any(np.diff(times) <= 0) or np.any(counts < 1):
            raise ValueError("each request needs >= 2 chunks, increasing times, >= 1 token a chunk and "
                             f"one count per time; got times {times.tolist()} and counts {counts.tolist()}")
        n = int(counts.sum())
        ttft.append(times[0] - send)
        tpot.append((times[-1] - times[0]) / (n - 1))
        gaps.extend(np.diff(times))  # the first chunk's wait is TTFT, not a gap
        decode, tokens = decode + times[-1] - times[0], tokens + n - 1
    return StreamStats(float(np.mean(ttft)), float(np.mean(tpot)), float(np.mean(gaps)), decode / tokens)
