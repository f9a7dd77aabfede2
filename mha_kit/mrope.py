"""Qwen2-VL's multimodal RoPE (M-RoPE): three position ids per token, for time, height and width.

:func:`mrope_position_ids` follows Hugging Face's ``Qwen2VLModel.get_rope_index``
(transformers ``models/qwen2_vl/modeling_qwen2_vl.py``): a text run counts up from one past the
largest id so far on all three axes; an image or video of ``t x h x w`` merged tokens takes the
next start for all three and adds its frame, row and column index. :func:`mrope_section_of_pairs`
says which axis rotates each rotary pair under a ``mrope_section`` split (Qwen2-VL ``config.json``:
``[16, 24, 24]`` of the 64 pairs of a 128-wide head).

Book: chapter "Positions" (M-RoPE section).
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def mrope_position_ids(segments):
    """Temporal, height and width position ids of a sequence of text runs and visual grids.

    Parameters
    ----------
    segments : sequence of tuples
        ``("text", n)`` for ``n`` text tokens, or ``("vision", t, h, w)`` for an image or video
        already merged to ``t`` frame groups of ``h x w`` tokens (Qwen2-VL merges 2 x 2 patches).

    Returns
    -------
    ndarray of int, shape ``(3, n_tokens)``
        Rows: temporal, height, width ids. Text tokens carry equal ids on the three rows.
    """
    rows, start = [], 0
    for seg in segments:
        kind = seg[0]
        if kind == "text":
            n = check_positive_int("text length", seg[1])
            rows.append(np.tile(np.arange(n), (3, 1)) + start)  # (3, n)
        elif kind == "vision":
            t, h, w = (check_positive_int(name, v) for name, v in zip(("t", "h", "w"), seg[1:]))
            grid = np.indices((t, h, w)).reshape(3, -1)  # (3, t*h*w): frame, row, column
            rows.append(grid + start)
        else:
            raise ValueError(f"segment kind must be 'text' or 'vision', got {kind!r}")
        start = int(rows[-1].max()) + 1
    if not rows:
        raise ValueError("need at least one segment")
    return np.concatenate(rows, axis=1)


def mrope_section_of_pairs(mrope_section):
    """The axis (0 time, 1 height, 2 width) that rotates each rotary pair.

    Parameters
    ----------
    mrope_section : sequence of 3 ints
        Pairs given to time, height and width, in that order (Qwen2-VL: ``[16, 24, 24]``).

    Returns
    -------
    ndarray of int, shape ``(sum(mrope_section),)``
    """
    sizes = [check_positive_int("mrope_section entry", s) for s in mrope_section]
    if len(sizes) != 3:
        raise ValueError(f"mrope_section needs 3 entries (time, height, width), got {len(sizes)}")
    return np.repeat(np.arange(3), sizes)
