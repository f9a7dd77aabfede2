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
