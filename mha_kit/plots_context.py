"""Figures of the part "Long context, kernels and numerics": PNG, labelled axes with units.

Every function returns the matplotlib ``Figure`` it drew. Like :mod:`mha_kit.plots`, this module
imports matplotlib, so ``import mha_kit`` does not.
"""
from __future__ import annotations

import numpy as np

from .plots import _figure

_METHOD_STYLES = ("-", "--", "-.", ":")


# --- Stretching RoPE (chapter "Stretching RoPE") ---

def rope_stretch_by_wavelength(head_dim, base, methods, trained_length=None):
    """How many times slower each RoPE pair turns under each scaling, against its wavelength.

    One line per method, ``theta_i / theta_i'`` (1 = used as trained, ``factor`` = fully
    interpolated) at the pair's original wavelength ``2 pi / theta_i``, on log axes; a dotted
    vertical line marks ``trained_length``.

    Parameters
    ----------
    head_dim : int
        ``r``, the rotated dimensions.
    base : float
        ``rope_theta``.
    methods : mapping of str to (dict, dict)
        Label -> ``(rope_scaling, lengths)``, with ``lengths`` the keyword arguments
        (``seq_len``, ``max_position_embeddings``) :func:`mha_kit.rope_inv_freq` needs.
    trained_length : int, optional

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Stretching RoPE".
    """
    from .rope_scaling import rope_inv_freq, stretch_per_pair

    if not methods:
        raise ValueError("expected at least one method to draw, got none")
    wavelength = 2 * np.pi / rope_inv_freq(head_dim, base)[0]  # (r/2,) tokens per turn, unscaled
    fig, ax = _figure(6.4, 4.4)
    top = 1.0
    for (label, (scaling, lengths)), style in zip(methods.items(), _METHOD_STYLES * len(methods)):
        stretch = stretch_per_pair(head_dim, base, scaling, **lengths)
        ax.plot(wavelength, stretch, style, label=label, linewidth=1.6)
        top = max(top, float(stretch.max()))
    if trained_length is not None:
        ax.axvline(trained_length, color="0.4", linestyle=":", linewidth=1)
        ax.annotate("trained context", (trained_length, 1.0), xytext=(4, 4), textcoords="offset points",
                    fontsize=8, color="0.3")
    ax.set(xscale="log", yscale="log", xlabel="wavelength of the pair before scaling (tokens per turn)",
           ylabel="slow-down of the pair (theta / theta')", title=f"Which pairs each method stretches (r = {head_dim})")
    ticks = 2.0 ** np.arange(0, np.floor(np.log2(top)) + 1)  # 1, 2, 4, 8 ...
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks], minor=False)
    ax.set_yticks([], minor=True)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    return fig


# --- Attention sinks (chapter "Attention sinks and StreamingLLM") ---

def attention_mass_by_position(weights, first=None):
    """Average attention weight each key position receives, one line per set of weights.

    Parameters
    ----------
    weights : mapping of str to ndarray, shape (..., n, s)
        Attention weights (rows summing to at most one); the average runs over every axis but the
        last, so each line shows the share of a query's attention that lands on key ``j``.
    first : int, optional
        Draw only the first ``first`` key positions.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Attention sinks and StreamingLLM".
    """
    if not weights:
        raise ValueError("expected at least one set of attention weights to draw, got none")
    fig, ax = _figure(6.4, 3.6)
    widths = (3.0,) + (1.4,) * (len(weights) - 1)  # the first set drawn wide, so later ones on top stay visible
    for (label, w), style, width in zip(weights.items(), _METHOD_STYLES * len(weights), widths):
        w = np.asarray(w)
        if w.ndim < 2:
            raise ValueError(f"weights {label!r}: expected shape (..., n, s), got {w.shape}")
        mass = w.reshape(-1, w.shape[-1]).mean(axis=0)[:first]  # (s,) mean over every query
        ax.plot(np.arange(mass.size), mass, style, marker="o", markersize=3, linewidth=width, label=label)
    ax.set(xlabel="key position j (tokens)", ylabel="mean attention weight on key j",
           title="Where the attention goes, averaged over queries")
    ax.legend(fontsize=8)
    return fig


def cache_bytes_vs_generated(cfg, generated, n_sink, window, dtype="bf16"):
    """KV cache of one sequence as tokens are generated: full cache, window cache, sink cache.

    The full cache grows with every token; window attention keeps the last ``n_sink + window``
    tokens and StreamingLLM the first ``n_sink`` plus the last ``window``: the same budget, so
    the two flat lines coincide. Log-log axes, bytes in GiB.

    Parameters
    ----------
    cfg : AttentionConfig or LatentAttentionConfig
    generated : sequence of int
        Token counts (x axis).
    n_sink, window : int
    dtype : str

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Attention sinks and StreamingLLM".
    """
    from .counting import kv_cache_bytes

    tokens = np.asarray(generated)
    budget = n_sink + window
    lines = {"full cache": [kv_cache_bytes(cfg, int(t), dtype=dtype) for t in tokens],
             f"window of {budget:,} (evicts the first tokens)": [kv_cache_bytes(cfg, int(min(t, budget)), dtype=dtype)
                                                                 for t in tokens],
             f"sink cache, {n_sink} + {window:,}": [kv_cache_bytes(cfg, int(min(t, budget)), dtype=dtype)
                                                     for t in tokens]}
    fig, ax = _figure(6.4, 3.6)
    for (label, nbytes), style, width in zip(lines.items(), ("-", "-", "--"), (1.6, 3.0, 1.6)):
        ax.plot(tokens, np.asarray(nbytes) / 2**30, style, linewidth=width, label=label)
    ax.set(xscale="log", yscale="log", xlabel="tokens in the sequence (prompt + generated)",
           ylabel=f"KV cache of one sequence (GiB, {dtype})", title=f"{cfg.name or 'model'}: what each cache holds")
    ax.legend(fontsize=8)
    return fig
