"""Positions that are not ``0, 1, 2, ...``: Dual Chunk Attention, LogN scaling, GLM's 2D ids.

* :func:`dca_distances`: the relative distance RoPE sees between query ``i`` and key ``j`` under
  Dual Chunk Attention (An et al. 2024, sec. 3), following SGLang's and vLLM's
  ``DualChunkRotaryEmbedding`` (key position ``j mod s``, ``s = chunk_size - local_size``; the query
  gets one position per branch: intra-chunk, successive-chunk, inter-chunk);
* :func:`logn_scale`: Qwen-1's LogN attention scaling, ``max(1, log(n) / log(train_len))`` on the
  query (Bai et al. 2023, sec. 2.3);
* :func:`glm_position_ids`: GLM's two position ids for blank infilling (Du et al. 2022, sec. 2.2).

Book: chapters "Stretching RoPE" and "Position encodings".
"""
from __future__ import annotations

import math

import numpy as np

from .config import check_positive_int


def dca_distances(n, chunk_size, local_size):
    """Relative distances under Dual Chunk Attention for ``n`` tokens, ``-1`` above the diagonal.

    Parameters
    ----------
    n : int
        Sequence length.
    chunk_size : int
        The longest distance the model was trained on (``original_max_position_embeddings``).
    local_size : int
        Tokens at the start of a chunk that still see the previous chunk at their true distance.

    Returns
    -------
    ndarray of int64, shape (n, n)
        Entry ``[i, j]`` (``j <= i``) is the distance RoPE applies. With ``s = chunk_size - local_size``
        and ``c = i // s``, ``c' = j // s``: same chunk ``i % s - j % s``; next chunk
        ``min(i % s + s, chunk_size) - j % s``; further back ``min(2 s - 1, chunk_size) - j % s``.
        No entry exceeds ``chunk_size``.
    """
    n, big, local = (check_positive_int(k, v) for k, v in (("n", n), ("chunk_size", chunk_size),
                                                             ("local_size", local_size)))
    if local >= big:
        raise ValueError(f"local_size must be smaller than chunk_size, got {local} >= {big}")
    s = big - local
    i = np.arange(n)[:, None]  # (n, 1) queries
    j = np.arange(n)[None, :]  # (1, n) keys
    gap = i // s - j // s  # (n, n) chunks between query and key
    q_pos = np.where(gap == 0, i % s, np.where(gap == 1, np.minimum(i % s + s, big), min(2 * s - 1, big)))
    return np.where(j <= i, q_pos - j % s, -1).astype(np.int64)


def logn_scale(n, train_len) -> float:
    """Qwen-1's LogN factor on the query at position ``n``: ``log(n) / log(train_len)``, at least 1."""
    n, train_len = check_positive_int("n", n), check_positive_int("train_len", train_len)
    if train_len < 2:
        raise ValueError(f"train_len must be at least 2 (log(1) = 0), got {train_len}")
    return max(1.0, math.log(n) / math.log(train_len))


def glm_position_ids(len_a, spans):
    """GLM's 2D position ids for a corrupted text and its blanks (Du et al. 2022, sec. 2.2).

    Parameters
    ----------
    len_a : int
        Length of Part A, the corrupted text, with one ``[MASK]`` per blank.
    spans : sequence of (mask_index, span_len)
        For each blank in the order it is generated: the index of its ``[MASK]`` in Part A and the
        span's length. Each span is fed as ``[S]`` followed by its ``span_len`` tokens (the model
        predicts them and a closing ``[E]``), so it takes ``span_len + 1`` input positions.

    Returns
    -------
    pos1, pos2 : ndarray of int64, shape (len_a + sum(span_len + 1),)
        ``pos1``: position in Part A (a span token takes its ``[MASK]``'s index). ``pos2``: 0 in Part A,
        ``1..span_len + 1`` inside a span (0-based here; the paper's figure counts ``pos1`` from 1).
    """
    len_a = check_positive_int("len_a", len_a)
    pos1, pos2 = list(range(len_a)), [0] * len_a
    for k, (where, span_len) in enumerate(spans):
        if not 0 <= where < len_a:
            raise ValueError(f"spans[{k}] mask_index must lie in Part A [0, {len_a}), got {where}")
        span_len = check_positive_int(f"spans[{k}] span_len", span_len)
        pos1 += [where] * (span_len + 1)  # [S] and the span's tokens
        pos2 += list(range(1, span_len + 2))
    return np.array(pos1, dtype=np.int64), np.array(pos2, dtype=np.int64)
