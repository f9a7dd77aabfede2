"""Figures of the part "Serving at scale": PNG, labelled axes with units, one message per figure."""
from __future__ import annotations

from .hardware import GPUS
from .models import MODEL_FACTS
from .plots import _figure


def tpot_and_throughput_vs_batch(plans, title=None):
    """Time per output token (left axis, ms) and decode tokens/s per GPU (right axis) against batch.

    Parameters
    ----------
    plans : sequence of DeploymentPlan
        :func:`mha_kit.plan_deployment` for one deployment at increasing ``batch_size``.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Two lines on a log batch axis; plans that do not fit are left out, so the lines stop where
        the cache runs out of memory.

    Book: chapter "Plan a deployment".
    """
    fitting = [p for p in plans if p.fits]
    if not fitting:
        raise ValueError("no plan fits in memory: nothing to draw")
    batches = [p.batch_size for p in fitting]
    fig, ax = _figure(6.4, 3.6)
    ax.plot(batches, [1e3 * p.tpot_s for p in fitting], "o-", color="#4C72B0", label="time per output token")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequences decoding together (batch)")
    ax.set_ylabel("time per output token floor (ms)", color="#4C72B0")
    right = ax.twinx()
    right.plot(batches, [p.tokens_per_s_per_gpu for p in fitting], "s--", color="#C44E52",
               label="decode tokens/s per GPU")
    right.set_ylabel("decode tokens/s per GPU (ceiling)", color="#C44E52")
    first = fitting[0]
    model = MODEL_FACTS[first.model].title if first.model in MODEL_FACTS else first.model
    gpu = GPUS[first.gpu].title if first.gpu in GPUS else first.gpu
    ax.set_title(title or f"{model} on {first.tp} x {gpu}, {first.context_len:,}-token context")
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], loc="upper left", fontsize=8)
    return fig
