"""Multimodal RoPE (M-RoPE) position ids, as Qwen2-VL assigns them to text, image and video tokens.

Qwen2-VL (Wang et al. 2024, sec. 2.1) splits the rotary dimensions into a temporal, a height and a
width part and gives every token three position ids. Text tokens get the same id in all three (so
M-RoPE reduces to 1-D RoPE on text); the tokens of an image (after the 2 x 2 merge) share one
temporal id and take height and width ids from their row and column; each segment starts one past
the largest id of the segment before it. Chapter: "Position encodings", the M-RoPE section.

>>> import mha_kit as mk
>>> ids, nxt = mk.mrope_position_ids([("text", 2), ("image", 1, 2, 3), ("text", 1)])
>>> ids[:, 2:8].tolist()  # the image: t, h, w
[[2, 2, 2, 2, 2, 2], [2, 2, 2, 3, 3, 3], [2, 3, 4, 2, 3, 4]]
>>> int(ids[0, 8]), nxt  # the text after it starts at max id + 1 = 5, not at token index 8
(5, 6)
"""
from __future__ import annotations

import numpy as np


def mrope_position_ids(segments):
    """Three position ids (temporal, height, width) per token, and the next free position.

    Parameters
    ----------
    segments : sequence of tuples
        ``("text", n)`` for ``n`` text tokens, or ``("image", t, h, w)`` for a grid of ``t`` frames
        (1 for an image) of ``h x w`` merged visual tokens, in sequence order.

    Returns
    -------
    ids : ndarray of int64, shape (3, n_tokens)
        Rows are the temporal, height and width ids.
    next_position : int
        The id the next token gets (one past the largest id so far).
    """
    rows, start = [], 0
    for seg in segments:
        if seg[0] == "text" and len(seg) == 2 and int(seg[1]) >= 0:
            pos = start + np.arange(int(seg[1]))
            rows.append(np.stack([pos, pos, pos]))  # the same id on all three axes
        elif seg[0] == "image" and len(seg) == 4 and min(int(v) for v in seg[1:]) >= 1:
            t, h, w = (int(v) for v in seg[1:])
            tt, hh, ww = np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij")  # (t, h, w) each
            rows.append(start + np.stack([tt.ravel(), hh.ravel(), ww.ravel()]))  # (3, t*h*w)
        else:
            raise ValueError(f"a segment must be ('text', n >= 0) or ('image', t, h, w) with each >= 1, got {seg!r}")
        if rows[-1].size:
            start = int(rows[-1].max()) + 1
    ids = np.concatenate(rows, axis=1) if rows else np.zeros((3, 0), dtype=np.int64)
    return ids.astype(np.int64), start
