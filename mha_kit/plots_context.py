"""Figures of the part "Long context, kernels and numerics": PNG, labelled axes with units.

Every function returns the matplotlib ``Figure`` it drew. Like :mod:`mha_kit.plots`, this module
imports matplotlib, so ``import mha_kit`` does not.
"""
from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

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


def cache_bytes_vs_generated(cfg, generated, n_sink, window, fmt="bf16"):
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
    fmt : str

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Attention sinks and StreamingLLM".
    """
    from .counting import kv_cache_bytes

    tokens = np.asarray(generated)
    budget = n_sink + window
    lines = {"full cache": [kv_cache_bytes(cfg, int(t), fmt=fmt) for t in tokens],
             f"window of {budget:,} (evicts the first tokens)": [kv_cache_bytes(cfg, int(min(t, budget)), fmt=fmt)
                                                                 for t in tokens],
             f"sink cache, {n_sink} + {window:,}": [kv_cache_bytes(cfg, int(min(t, budget)), fmt=fmt)
                                                     for t in tokens]}
    fig, ax = _figure(6.4, 3.6)
    for (label, nbytes), style, width in zip(lines.items(), ("-", "-", "--"), (1.6, 3.0, 1.6)):
        ax.plot(tokens, np.asarray(nbytes) / 2**30, style, linewidth=width, label=label)
    ax.set(xscale="log", yscale="log", xlabel="tokens in the sequence (prompt + generated)",
           ylabel=f"KV cache of one sequence (GiB, {fmt})", title=f"{cfg.name or 'model'}: what each cache holds")
    ax.legend(fontsize=8)
    return fig

# --- FlashAttention-2 and Flash-Decoding (chapter "FlashAttention-2 and Flash-Decoding") ---


def split_occupancy(num_kv_heads, batch_sizes, splits, num_sms, gpu_title="GPU"):
    """Share of the SMs a split-K decode step keeps busy, against the number of key splits.

    One line per batch size: :func:`mha_kit.wave_efficiency` of
    :func:`mha_kit.decode_work_items` (``batch * h_kv * splits`` tiles) on ``num_sms`` SMs, one
    tile per SM at a time, in percent.

    Parameters
    ----------
    num_kv_heads : int
    batch_sizes : sequence of int
    splits : sequence of int
        Split counts (x axis, log 2).
    num_sms : int
    gpu_title : str
        Name of the GPU in the title.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    from .kernels import decode_work_items, wave_efficiency

    fig, ax = _figure(6.0, 3.6)
    for batch, color in zip(batch_sizes, ("#C44E52", "#4C72B0", "#55A868", "#8172B2")):
        busy = [100 * wave_efficiency(decode_work_items(batch, num_kv_heads, k), num_sms) for k in splits]
        ax.plot(splits, busy, marker="o", markersize=4, color=color, label=f"batch {batch}")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="key splits per (sequence, KV head)", ylabel="SMs busy, averaged over waves (%)", ylim=(0, 105),
           title=f"Decode on {gpu_title} ({num_sms} SMs), {num_kv_heads} KV heads")
    ax.legend(loc="lower right", fontsize=8)
    return fig


_TILE_COLORS = ListedColormap(["#DDDDDD", "#F2B134", "#4C72B0"])  # skipped, masked, full


def causal_tile_map(n, block_q, block_k):
    """The tiles of a causal ``n x n`` attention: computed in full, masked on the diagonal, or skipped.

    The image holds 0 (skipped), 1 (masked) and 2 (full) per tile, the categories of
    :func:`mha_kit.causal_tiles`.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    from .attention import causal_mask

    mask = causal_mask(n)
    tiles = [[mask[i:i + block_q, j:j + block_k] for j in range(0, n, block_k)] for i in range(0, n, block_q)]
    kinds = np.array([[0 if not t.any() else 2 if t.all() else 1 for t in row] for row in tiles])  # (T_r, T_c)
    fig, ax = _figure(4.2, 3.6)
    ax.imshow(kinds, cmap=_TILE_COLORS, vmin=0, vmax=2)
    ax.set(xlabel=f"key block ({block_k} keys each)", ylabel=f"query block ({block_q} queries each)",
           title=f"Causal tiles, n = {n:,}")
    ax.legend(handles=[Patch(color=_TILE_COLORS(k), label=label) for k, label in
                       ((2, "computed, no mask"), (1, "computed, masked"), (0, "skipped"))],
              loc="upper right", fontsize=7)
    return fig


# --- Softmax numerics in current models (chapter "Softmax numerics in current models") ---


def soft_cap_curves(caps, x_max=150.0):
    """Soft-capped logits and their derivative against the raw logit, one line per cap.

    Left: :func:`mha_kit.soft_cap` with the identity dotted; right: :func:`mha_kit.soft_cap_grad`.

    Parameters
    ----------
    caps : mapping of str to float
        Label to cap, such as ``{"attention (50)": 50.0}``.
    x_max : float
        The x axis runs from 0 to ``x_max``.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Softmax numerics in current models".
    """
    from .numerics import soft_cap, soft_cap_grad

    import matplotlib.pyplot as plt

    x = np.linspace(0.0, x_max, 301)
    fig, (ax_value, ax_grad) = plt.subplots(1, 2, figsize=(9.0, 3.4), dpi=100, layout="constrained")
    ax_value.plot(x, x, ":", color="grey", label="no cap")
    for (label, cap), color in zip(caps.items(), ("#4C72B0", "#C44E52", "#55A868")):
        ax_value.plot(x, soft_cap(x, cap), color=color, label=label)
        ax_grad.plot(x, soft_cap_grad(x, cap), color=color, label=label)
    ax_value.set(xlabel="raw logit x", ylabel="capped logit  cap·tanh(x / cap)", ylim=(0, x_max),
                 title="The cap bounds the logit")
    ax_grad.set(xlabel="raw logit x", ylabel="derivative  1 − tanh²(x / cap)", ylim=(0, 1.05),
                title="and its gradient fades beyond the cap")
    ax_value.legend(fontsize=8, loc="upper left")
    return fig


# --- After GQA and MLA (chapter "After GQA and MLA: sparse, linear and state-space hybrids") ---


def cache_growth(cfg, contexts, layout, attention_every, fmt="bf16"):
    """Cache bytes of one sequence against context length, for four ways of building ``cfg``'s layers.

    Lines: every layer full attention (:func:`mha_kit.kv_cache_bytes`); ``layout``'s local/global
    interleaving (:func:`mha_kit.layout_kv_bytes`); every layer linear attention with ``cfg``'s
    heads (:func:`mha_kit.linear_state_bytes`, fp32); and a hybrid with full attention in one
    layer of every ``attention_every`` (:func:`mha_kit.hybrid_cache_bytes`). GiB, log-log.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    from .counting import kv_cache_bytes
    from .hybrid import hybrid_cache_bytes, layout_kv_bytes, linear_state_bytes

    s = np.array(contexts, dtype=float)
    gib = 2.0**30
    lines = {
        "full attention, every layer": [kv_cache_bytes(cfg, int(c), fmt=fmt) / gib for c in contexts],
        f"{layout.title} layout ({layout.local_per_global}:1, window {layout.window:,})":
            [layout_kv_bytes(cfg, int(c), layout, fmt) / gib for c in contexts],
        f"hybrid, attention in 1 layer of {attention_every}":
            [hybrid_cache_bytes(cfg, int(c), attention_every, fmt) / gib for c in contexts],
        "linear attention, every layer (state)":
            [linear_state_bytes(cfg.num_layers, cfg.num_heads, cfg.head_dim) / gib] * len(contexts),
    }
    fig, ax = _figure(6.4, 3.8)
    for (label, values), color, style in zip(lines.items(), ("#C44E52", "#55A868", "#8172B2", "#4C72B0"),
                                             ("-", "-", "--", ":")):
        ax.plot(s, values, style, color=color, label=label)
    ax.set(xscale="log", yscale="log", xlabel="context length s (tokens)", ylabel="cache of one sequence (GiB)",
           title=f"{cfg.name or 'model'}: what each layout keeps per sequence")
    ax.legend(fontsize=8, loc="upper left")
    return fig
