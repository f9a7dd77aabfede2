"""Figures of the part "Serving in 2026": PNG, labelled axes with units, one message per figure.

Every function returns the matplotlib ``Figure`` it drew; the axes come from
:func:`mha_kit.plots._figure`, the book's size.
"""
from __future__ import annotations

import numpy as np

from .plots import _figure

# --- Continuous batching and chunked prefill (chapter "Continuous batching and chunked prefill") ---

_METRICS = (("median_ttft", "median TTFT", "#4C72B0"), ("median_tpot", "median TPOT", "#55A868"),
            ("worst_itl", "worst inter-token gap", "#C44E52"))
_PHASES = (("prefill", "prompt (prefill)", "#DD8452"), ("decode", "one output token (decode)", "#4C72B0"))


def latency_by_policy(results):
    """Median TTFT, median TPOT and the worst inter-token gap of each policy, grouped bars in ms.

    Parameters
    ----------
    results : mapping of str to sequence of RequestLatency
        A label per scheduling policy and what :func:`mha_kit.simulate_batching` returned for it.

    Returns
    -------
    matplotlib.figure.Figure
        One group of three bars per policy, log y axis, each bar labelled with its value.

    Book: chapter "Continuous batching and chunked prefill".
    """
    from .scheduling import summarize_latencies

    if not results:
        raise ValueError("results must map at least one policy label to its latencies, got none")
    summaries = {label: summarize_latencies(lats) for label, lats in results.items()}
    x, width = np.arange(len(summaries)), 0.8 / len(_METRICS)
    fig, ax = _figure(7.2, 3.8)
    for j, (field, name, color) in enumerate(_METRICS):
        ms = [1e3 * getattr(s, field) for s in summaries.values()]
        bars = ax.bar(x + (j - 1) * width, ms, width, color=color, label=name)
        ax.bar_label(bars, labels=[f"{v:,.0f}" if v >= 100 else f"{v:.1f}" for v in ms], fontsize=7, padding=1)
    ax.set_xticks(x, list(summaries), fontsize=8)
    ax.set(yscale="log", ylabel="milliseconds (log scale)", title="What each scheduling policy does to latency")
    ax.set_ylim(top=ax.get_ylim()[1] * 3)  # room for the labels
    ax.legend(fontsize=8, loc="upper right")
    return fig


def batch_timeline(steps, labels, title="Which request each step served"):
    """The steps of a schedule as bars: one row per request, prefill and decode in two colours.

    Parameters
    ----------
    steps : sequence of BatchStep
        From :func:`mha_kit.batching_steps`.
    labels : sequence of str
        A row label for each request index the steps mention, in index order.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        x: time in ms; a bar spans each step a request took part in.

    Book: chapter "Continuous batching and chunked prefill".
    """
    labels = list(labels)
    seen = {i for s in steps for i in (*(r for r, _ in s.prefill), *s.decode)}
    if not steps or max(seen) >= len(labels):
        raise ValueError(f"need at least one step and a label for each of the {max(seen, default=-1) + 1} "
                         f"requests the steps serve, got {len(steps)} steps and {len(labels)} labels")
    fig, ax = _figure(6.4, 0.9 + 0.45 * len(labels))
    for phase, name, color in _PHASES:
        rows = [(i, 1e3 * s.start, 1e3 * s.seconds) for s in steps
                for i in (s.decode if phase == "decode" else [r for r, _ in s.prefill])]
        if rows:
            y, left, width = zip(*rows)
            ax.barh(y, width, left=left, height=0.6, color=color, edgecolor="white", linewidth=0.4, label=name)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set(xlabel="time (ms)", title=title)
    ax.legend(fontsize=8, loc="lower right")
    return fig


# --- Speculative decoding (chapter "Speculative decoding and the KV cache") ---

def expected_tokens_vs_k(alphas, ks):
    """Expected tokens per verification step against the draft length, one line per acceptance rate.

    Parameters
    ----------
    alphas : sequence of float in [0, 1]
    ks : sequence of int >= 0
        Draft tokens per step (x axis).

    Returns
    -------
    matplotlib.figure.Figure
        Lines of :func:`mha_kit.speculative_expected_tokens`, and for each ``alpha < 1`` a dotted
        line at its limit ``1 / (1 - alpha)``.

    Book: chapter "Speculative decoding and the KV cache".
    """
    from .speculative import speculative_expected_tokens

    alphas, ks = list(alphas), list(ks)
    if not alphas or not ks:
        raise ValueError(f"need at least one alpha and one k, got {len(alphas)} and {len(ks)}")
    fig, ax = _figure()
    for j, alpha in enumerate(alphas):
        ax.plot(ks, [speculative_expected_tokens(alpha, k) for k in ks], marker="o", markersize=3,
                color=f"C{j}", label=f"alpha = {alpha:g}")
        if alpha < 1:
            ax.axhline(1 / (1 - alpha), color=f"C{j}", linestyle=":", linewidth=1)
    ax.set(xlabel="draft tokens per step k", ylabel="expected tokens per verification step",
           title="More drafts help less and less: the limit is 1 / (1 - alpha)")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def verification_intensity(configs, ks, gpu, fmt="bf16"):
    """FLOPs per byte of KV cache read by a verification step of ``k + 1`` queries, against ``k``.

    Parameters
    ----------
    configs : sequence of AttentionConfig or LatentAttentionConfig
    ks : sequence of int >= 0
        Draft tokens per step (x axis); the step has ``k + 1`` queries.
    gpu : Accelerator
        Its ridge point is drawn as a dashed line.
    fmt : str or int
        Cache element type.

    Returns
    -------
    matplotlib.figure.Figure
        :func:`mha_kit.arithmetic_intensity` with ``queries_per_step = k + 1`` (independent of the
        context length), log y axis.

    Book: chapter "Speculative decoding and the KV cache".
    """
    from .counting import arithmetic_intensity

    configs, ks = list(configs), list(ks)
    if not configs or not ks:
        raise ValueError(f"need at least one config and one k, got {len(configs)} and {len(ks)}")
    fig, ax = _figure()
    for j, cfg in enumerate(configs):
        ax.plot(ks, [arithmetic_intensity(cfg, 1, fmt, queries_per_step=k + 1) for k in ks], marker="o",
                markersize=3, color=f"C{j}", label=cfg.name or f"config {j}")
    ax.axhline(gpu.ridge_point, color="gray", linestyle="--", linewidth=1)
    # label at the right end, under the line: the curves rise from the left and would cross it there
    ax.annotate(f"{gpu.title} ridge point", (ks[-1], gpu.ridge_point), textcoords="offset points", xytext=(-2, -4),
                ha="right", va="top", fontsize=8, color="gray")
    ax.set(yscale="log", xlabel="draft tokens per step k (the step has k + 1 queries)",
           ylabel=f"attention FLOPs per byte of cache ({fmt}, log)",
           title="Verification multiplies decode attention's intensity by k + 1")
    ax.legend(fontsize=8, loc="lower right")
    return fig


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
    from .numerics import storage_dtype

    fig, ax = _figure(6.2, 3.6)
    for fmt, color in zip(formats, ("#4C72B0", "#C44E52")):
        values = np.arange(256, dtype=np.uint8).view(storage_dtype(fmt)).astype(np.float64)
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
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig, ax = _figure(6.4, 4.0)
    for label, bits, error in rows:
        ax.plot([bits], [100 * error], "o", color="#4C72B0" if "channel" in label else "#C44E52", markersize=5)
        ax.annotate(label, (bits, 100 * error), textcoords="offset points", xytext=(5, 3), fontsize=7)
    ax.set(yscale="log", xlabel="bits stored per cached number (scales included)",
           ylabel="attention output error (% of its norm)", xlim=(0, 1.3 * max(bits for _, bits, _ in rows)),
           title="Keys with an outlier channel: per-channel scales keep 4 bits usable")
    # labels at 1, 2, 5, 10, 20, 50 only, as plain numbers (set after the log scale, which resets them):
    # labelling every minor tick crowds the axis near each power of ten
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
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
