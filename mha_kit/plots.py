"""Figures for the book: PNG, labelled axes with units, one message per figure.

Every function returns the matplotlib ``Figure`` it drew, so a notebook cell ending with the
call shows it once. ``matplotlib`` is imported here only, so ``import mha_kit`` stays light.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

# One palette for the attention variants, used by every figure.
VARIANT_COLORS = {"mha": "#4C72B0", "gqa": "#55A868", "mqa": "#C44E52", "mla": "#8172B2"}


def _figure(width=6.0, height=3.6):
    """A new figure and axes in the book's size."""
    fig, ax = plt.subplots(figsize=(width, height), dpi=100, layout="constrained")
    return fig, ax


# --- Decoding cost and cache size (chapters "Worked example" and "KV-cache calculator") ---

_LINESTYLES = ("-", "--", ":", "-.")  # tell apart configs of the same variant (same colour)


def decode_cost_bars(cfg, context_len, kv_head_counts=None, dtype="bf16"):
    """Attention arithmetic stays flat across MHA, GQA and MQA while the bytes read fall.

    Two panels for one decoded token in one layer with ``context_len`` cached tokens: the
    score and value-mix multiply-adds (linear axis) and the key-value bytes read from the
    cache (log axis), one bar per number of key-value heads.

    Parameters
    ----------
    cfg : AttentionConfig
    context_len : int
        ``s``, tokens in the cache.
    kv_head_counts : sequence of int, optional
        Values of ``h_kv`` to draw; default ``h``, ``cfg.num_kv_heads`` and 1 (MHA, GQA, MQA).
    dtype : str or int
        Cache element type (name or bits).

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Worked example".
    """
    from .counting import attention_macs, kv_bytes_read
    from .units import format_bytes, format_int

    counts = kv_head_counts or sorted({cfg.num_heads, cfg.num_kv_heads, 1}, reverse=True)
    variants = [cfg.with_kv_heads(n) for n in counts]
    labels = [f"{v.variant.upper()}\nh_kv={v.num_kv_heads}" for v in variants]
    colors = [VARIANT_COLORS[v.variant] for v in variants]
    macs = [attention_macs(v, context_len) for v in variants]
    reads = [kv_bytes_read(v, context_len, dtype) for v in variants]
    fig, (ax_macs, ax_bytes) = plt.subplots(1, 2, figsize=(9.0, 3.6), dpi=100, layout="constrained")
    bars = ax_macs.bar(labels, [m / 1e6 for m in macs], color=colors)
    ax_macs.bar_label(bars, labels=[format_int(m) for m in macs], fontsize=8)
    ax_macs.set(ylabel="multiply-adds per token per layer (millions)", title="Attention arithmetic")
    bars = ax_bytes.bar(labels, [b / 2**20 for b in reads], color=colors)
    ax_bytes.bar_label(bars, labels=[format_bytes(b) for b in reads], fontsize=8)
    ax_bytes.set_yscale("log")
    ax_bytes.set(ylabel=f"KV bytes read per token per layer\n(MiB, {dtype}, log scale)", title="Key-value bytes read")
    fig.suptitle(f"{cfg.name or 'attention layer'}: one decoded token, s = {format_int(context_len)}")
    return fig


def cache_vs_context(configs, contexts, dtype="bf16", batch_size=1):
    """KV-cache size of whole models against context length, log-log, coloured by variant.

    Parameters
    ----------
    configs : sequence of AttentionConfig or LatentAttentionConfig
        With ``num_layers`` set: the cache counts every layer.
    contexts : sequence of int
        Context lengths ``s`` in tokens (x axis).
    dtype : str or int
        Cache element type (name or bits).
    batch_size : int
        Sequences held at once.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "KV-cache calculator".
    """
    from .counting import kv_cache_bytes

    configs, contexts = list(configs), list(contexts)
    if not configs or not contexts:
        raise ValueError(f"need at least one config and one context length, got {len(configs)} and {len(contexts)}")
    fig, ax = _figure()
    seen = {}  # variant -> configs drawn so far, to pick a line style
    for cfg in configs:
        style = _LINESTYLES[seen.get(cfg.variant, 0) % len(_LINESTYLES)]
        seen[cfg.variant] = seen.get(cfg.variant, 0) + 1
        gib = [kv_cache_bytes(cfg, s, batch_size, dtype) / 2**30 for s in contexts]
        ax.plot(contexts, gib, style, marker="o", markersize=3, color=VARIANT_COLORS[cfg.variant],
                label=f"{cfg.name} ({cfg.variant.upper()})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="context length s (tokens, log scale)",
           ylabel=f"KV cache, batch {batch_size} (GiB, {dtype}, log scale)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
