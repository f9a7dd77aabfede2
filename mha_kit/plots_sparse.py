"""Figures of the chapters "Sparse patterns and long-context evaluation" and "State-space models".

Every function returns the matplotlib ``Figure`` it drew. Like :mod:`mha_kit.plots`, this module
imports matplotlib, so ``import mha_kit`` does not.
"""
from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap

from .plots import _figure

_MASK_COLORS = ListedColormap(["#f2f2f2", "#1f4e79"])  # hidden, attended
_STYLES = ("-", "--", "-.", ":", (0, (5, 1)))


def mask_gallery(masks, columns=3):
    """Boolean masks side by side, each titled with its name and the share of the ``n x n`` scores it keeps.

    Parameters
    ----------
    masks : mapping of str to ndarray of bool, shape (n, n)
        Name -> mask (query down, key across; dark where the query attends).
    columns : int

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Sparse patterns and long-context evaluation".
    """
    if not masks:
        raise ValueError("expected at least one mask to draw, got none")
    rows = -(-len(masks) // columns)
    fig, axes = _figure(3.0 * columns, 3.1 * rows)
    fig.clear()
    grid = fig.subplots(rows, columns, squeeze=False)
    for ax, (name, mask) in zip(grid.flat, masks.items()):
        mask = np.asarray(mask)
        ax.imshow(mask, cmap=_MASK_COLORS, vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"{name}\n{mask.sum() / mask.size:.0%} of n\u00b2 scores", fontsize=9)
        ax.set_xlabel("key position", fontsize=8)
        ax.set_ylabel("query position", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(grid.flat)[len(masks):]:
        ax.axis("off")
    return fig


def bytes_vs_context(contexts, curves, title):
    """Bytes one sequence keeps against the context, one line per design, log-log.

    Parameters
    ----------
    contexts : sequence of int
        Context lengths in tokens.
    curves : mapping of str to sequence of int
        Label -> bytes at each context (a flat line for a fixed-size state).
    title : str

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "State-space models and linear-time layers".
    """
    if not curves:
        raise ValueError("expected at least one curve to draw, got none")
    fig, ax = _figure(6.4, 4.2)
    for (label, values), style in zip(curves.items(), _STYLES * len(curves)):
        if len(values) != len(contexts):
            raise ValueError(f"curve {label!r} has {len(values)} values for {len(contexts)} contexts")
        ax.plot(contexts, np.asarray(values, dtype=float) / 2**20, linestyle=style, marker="o", markersize=3,
                label=label, linewidth=1.6)
    ax.set(xscale="log", yscale="log", xlabel="context (tokens)", ylabel="bytes per sequence (MiB)", title=title)
    ax.set_xticks(contexts, [f"{c // 1024}K" for c in contexts])
    ax.minorticks_off()
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return fig
