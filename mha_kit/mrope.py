"""Multimodal RoPE (M-RoPE, Qwen2-VL): three position ids per token, temporal, height and width.

Qwen2-VL splits each head's rotary frequency pairs into a temporal, a height and a width section
(``mrope_section`` [16, 24, 24] of the 64 pairs of a 128-wide head) and rotates each section by its own id.
Text tokens get the same id in all three, so text alone is ordinary 1-D RoPE; an image's tokens share one
temporal id and take their row and column; a video's temporal id grows by one per frame group (two frames
after Qwen2-VL's temporal patch); the next segment starts one past the largest id used so far (Wang et al.
2024, arXiv:2409.12191, sec. 2.1). The loop is Hugging Face's ``Qwen2VLModel.get_rope_index``
(transformers ``models/qwen2_vl/modeling_qwen2_vl.py``) on segments instead of token ids; ``next_id`` minus
the token count is its ``mrope_position_deltas``. Qwen2.5-VL's scaling of video time ids by seconds is not
modelled. Book: chapter "Position encodings", the M-RoPE section.

>>> import mha_kit as mk
>>> ids, nxt = mk.mrope_position_ids([("text", 2), ("image", (1, 2, 2)), ("text", 1)])
>>> ids.tolist()
[[0, 1, 2, 2, 2, 2, 4], [0, 1, 2, 2, 3, 3, 4], [0, 1, 2, 3, 2, 3, 4]]
>>> nxt
5
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def mrope_position_ids(segments) -> tuple:
    """Temporal, height and width position ids for a sequence of text and visual segments (Qwen2-VL).

    Parameters
    ----------
    segments : sequence of (kind, size)
        ``("text", n)`` for n text tokens, or ``("image", (t, h, w))`` / ``("video", (t, h, w))`` for a
        grid of t frame groups of h x w visual tokens (after the 2 x 2 merge), laid out frame, row, column.

    Returns
    -------
    (ids, next_id) : array (3, n_tokens) of int, int
        Rows: temporal, height, width. ``next_id`` is where a following segment would start.
    """
    rows, start = [], 0
    for kind, size in segments:
        if kind == "text":
            n = check_positive_int("text length", size)
            pos = np.arange(start, start + n)  # (n,): the same id on all three axes
            rows.append(np.stack([pos, pos, pos]))
        elif kind in ("image", "video"):
            t, h, w = (check_positive_int(name, v) for name, v in zip(("frames", "height", "width"), size))
            tt, hh, ww = np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij")  # (t, h, w) each
            rows.append(start + np.stack([tt.ravel(), hh.ravel(), ww.ravel()]))  # (3, t*h*w)
        else:
            raise ValueError(f"a segment is ('text', n), ('image', (t, h, w)) or ('video', (t, h, w)), got {kind!r}")
        start = int(rows[-1].max()) + 1
    if not rows:
        raise ValueError("mrope_position_ids needs at least one segment, got none")
    return np.concatenate(rows, axis=1), start
