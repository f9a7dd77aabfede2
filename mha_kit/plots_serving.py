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


def verification_intensity(configs, ks, gpu, dtype="bf16"):
    """FLOPs per byte of KV cache read by a verification step of ``k + 1`` queries, against ``k``.

    Parameters
    ----------
    configs : sequence of AttentionConfig or LatentAttentionConfig
    ks : sequence of int >= 0
        Draft tokens per step (x axis); the step has ``k + 1`` queries.
    gpu : Accelerator
        Its ridge point is drawn as a dashed line.
    dtype : str or int
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
        ax.plot(ks, [arithmetic_intensity(cfg, 1, dtype, queries_per_step=k + 1) for k in ks], marker="o",
                markersize=3, color=f"C{j}", label=cfg.name or f"config {j}")
    ax.axhline(gpu.ridge_point, color="gray", linestyle="--", linewidth=1)
    ax.annotate(f"{gpu.title} ridge point", (ks[0], gpu.ridge_point), textcoords="offset points", xytext=(2, 4),
                fontsize=8, color="gray")
    ax.set(yscale="log", xlabel="draft tokens per step k (the step has k + 1 queries)",
           ylabel=f"attention FLOPs per byte of cache ({dtype}, log)",
           title="Verification multiplies decode attention's intensity by k + 1")
    ax.legend(fontsize=8, loc="lower right")
    return fig
