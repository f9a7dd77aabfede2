"""Figures for the part "Serving in 2026": PNG, labelled axes with units, one message per figure.

Every function returns the matplotlib ``Figure`` it drew; the numbers it draws come from mha_kit.
``matplotlib`` is imported here only (through :func:`mha_kit.plots._figure`).
"""
from __future__ import annotations

import numpy as np

from .plots import _figure


# --- Prefix caching in depth (chapter "Prefix caching in depth") -----------------------------------

def prefix_hit_rate_vs_capacity(rates, block_size):
    """Prefix-cache hit rate of one request stream against the cache's capacity, block vs radix.

    Parameters
    ----------
    rates : mapping of int to (float, float)
        ``capacity_tokens -> (blocks_rate, radix_rate)``, as :func:`mha_kit.hit_rates_by_capacity`
        returns them.
    block_size : int
        The block cache's block size, for the legend.

    Returns
    -------
    matplotlib.figure.Figure
        Two lines, block cache then radix tree, hit rate in percent against thousands of tokens.

    Book: chapter "Prefix caching in depth".
    """
    capacities = np.array(sorted(rates), dtype=float)
    fig, ax = _figure(6.2, 3.6)
    for i, (label, style) in enumerate(((f"hashed blocks of {block_size} (vLLM)", "-o"),
                                        ("radix tree, per token (SGLang)", "--s"))):
        ax.plot(capacities / 1000, [100 * rates[c][i] for c in sorted(rates)], style, markersize=4, label=label)
    ax.set(xlabel="cache capacity (thousands of tokens)", ylabel="prompt tokens reused (%)", ylim=(0, 100),
           title="Multi-turn chat: reuse against cache capacity, LRU eviction")
    ax.legend(fontsize=8, loc="lower right")
    return fig


# --- Low-precision KV cache (chapter "Low-precision KV cache") --------------------------------------

def fp8_relative_step(formats=("fp8_e4m3", "fp8_e5m2")):
    """Gap to the next representable number, relative to the number, over each format's range.

    Every positive finite value of the format is enumerated from its 256 bit patterns
    (``ml_dtypes``), so the steps are the format's own: a sawtooth between ``2^-m`` and about half
    of it (``m`` mantissa bits) across the normal range, rising in the subnormals.

    Returns
    -------
    matplotlib.figure.Figure
        One step line per format, log-log, value on x, relative gap in percent on y.

    Book: chapter "Low-precision KV cache".
    """
    from .quantization import _fp8_dtype

    fig, ax = _figure(6.2, 3.6)
    for fmt, color in zip(formats, ("#4C72B0", "#C44E52")):
        values = np.arange(256, dtype=np.uint8).view(_fp8_dtype(fmt)).astype(np.float64)
        values = np.unique(values[np.isfinite(values) & (values > 0)])  # ascending, no NaN or inf
        gaps = np.diff(values) / values[:-1]
        ax.step(values[:-1], 100 * gaps, where="post", color=color, label=f"{fmt} (max {values[-1]:,.0f})")
    ax.set(xscale="log", yscale="log", xlabel="magnitude of the stored number",
           ylabel="gap to the next number (% of it)", title="FP8: E4M3 steps half as far, E5M2 reaches 128x higher")
    ax.legend(fontsize=8)
    return fig


def kv_error_vs_bits(rows):
    """Attention-output error against bits per cached number, one labelled point per scheme.

    Parameters
    ----------
    rows : sequence of (label, bits_per_number, relative_error)
        ``bits_per_number`` with the scales counted in; ``relative_error`` as returned by
        :func:`mha_kit.attention_error`.

    Returns
    -------
    matplotlib.figure.Figure
        Log error against bits; each point annotated with its label.

    Book: chapter "Low-precision KV cache".
    """
    from matplotlib.ticker import FuncFormatter

    fig, ax = _figure(6.4, 4.0)
    for label, bits, error in rows:
        ax.plot([bits], [100 * error], "o", color="#4C72B0" if "channel" in label else "#C44E52", markersize=5)
        ax.annotate(label, (bits, 100 * error), textcoords="offset points", xytext=(5, 3), fontsize=7)
    ax.set(yscale="log", xlabel="bits stored per cached number (scales included)",
           ylabel="attention output error (% of its norm)", xlim=(0, 1.3 * max(bits for _, bits, _ in rows)),
           title="Keys with an outlier channel: per-channel scales keep 4 bits usable")
    plain = FuncFormatter(lambda y, _: f"{y:g}")  # 20, not 2 x 10^1 (set after the log scale, which resets them)
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    return fig


# --- Disaggregated prefill and decode (chapter "Disaggregated prefill and decode") ------------------

def transfer_vs_prefill(facts, prompt_lengths, links, gpu, fmt="bf16"):
    """Seconds to move a prompt's KV cache over each link against seconds to compute its prefill.

    Parameters
    ----------
    facts : ModelFacts
        A dense decoder (:func:`mha_kit.prefill_flops`).
    prompt_lengths : sequence of int
    links : sequence of Link
        ``mk.LINKS`` records; one dashed line each (:func:`mha_kit.kv_transfer_seconds`).
    gpu : Accelerator
        Its bf16 peak sets the solid prefill line (:func:`mha_kit.prefill_seconds`, a lower bound).
    fmt : str
        Cache format of the transfer.

    Returns
    -------
    matplotlib.figure.Figure
        Log-log, prompt tokens on x, milliseconds on y; the prefill line first.

    Book: chapter "Disaggregated prefill and decode".
    """
    from .disaggregation import kv_transfer_seconds, prefill_seconds

    n = np.array(prompt_lengths, dtype=float)
    fig, ax = _figure(6.4, 3.8)
    ax.plot(n, [1e3 * prefill_seconds(facts, t, gpu.bf16_flops) for t in prompt_lengths], color="black",
            label=f"prefill on one {gpu.title} at peak")
    for link, color in zip(links, ("#4C72B0", "#55A868", "#C44E52", "#8172B2")):
        ms = [1e3 * kv_transfer_seconds(facts.config, t, link.bytes_per_s, fmt) for t in prompt_lengths]
        ax.plot(n, ms, "--", color=color, label=f"KV over {link.title} ({link.bytes_per_s / 1e9:,.0f} GB/s)")
    ax.set(xscale="log", yscale="log", xlabel="prompt length (tokens)", ylabel="time (ms)",
           title=f"{facts.title}, {fmt} cache: moving it against computing it")
    ax.legend(fontsize=7, loc="upper left")
    return fig
