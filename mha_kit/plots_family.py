"""Figures of the chapter "Position encodings, the whole family": PNG, labelled axes with units.

Like :mod:`mha_kit.plots`, this module imports matplotlib, so ``import mha_kit`` does not.
"""
from __future__ import annotations

import numpy as np

from .plots import _figure

_STYLES = ("-", "--", "-.", ":", (0, (1, 3)))


def stretch_by_pair(wavelength, stretches, trained_length=None, title="Slow-down of each RoPE pair"):
    """Per-pair slow-downs ``theta_i / theta_i'`` of several rescalings, against the pair's wavelength.

    Unlike :func:`mha_kit.plots_context.rope_stretch_by_wavelength`, the slow-downs are given, so
    a rescaling that no ``rope_type`` formula produces (LongRoPE's searched factors) can be drawn
    beside the formulas.

    Parameters
    ----------
    wavelength : ndarray, shape (r/2,)
        Tokens per turn of each pair before rescaling.
    stretches : mapping of str to ndarray, shape (r/2,)
        Label -> how many times slower each pair turns.
    trained_length : int, optional
        Marked by a dotted vertical line.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Position encodings, the whole family", section "LongRoPE".
    """
    wavelength = np.asarray(wavelength, dtype=float)
    if not stretches:
        raise ValueError("expected at least one rescaling to draw, got none")
    for label, stretch in stretches.items():
        if np.shape(stretch) != wavelength.shape:
            raise ValueError(f"{label}: expected {wavelength.shape[0]} slow-downs, got shape {np.shape(stretch)}")
    fig, ax = _figure(6.4, 4.2)
    for (label, stretch), style in zip(stretches.items(), _STYLES * len(stretches)):
        ax.plot(wavelength, stretch, linestyle=style, label=label, linewidth=1.6)
    if trained_length is not None:
        ax.axvline(trained_length, color="0.4", linestyle=":", linewidth=1)
        ax.annotate("trained context", (trained_length, 1.0), xytext=(4, 4), textcoords="offset points",
                    fontsize=8, color="0.3")
    ax.set(xscale="log", yscale="log", xlabel="wavelength of the pair before rescaling (tokens per turn)",
           ylabel="slow-down of the pair (theta / theta')", title=title)
    ax.legend(fontsize=8, loc="upper left")
    return fig
