"""Training-side and debugging numerics: loss scaling, log-probabilities, the first non-finite layer.

* :func:`dynamic_loss_scale` replays PyTorch's ``GradScaler`` rule (halve the scale and skip the
  step on an inf or NaN gradient; double it after ``growth_interval`` clean steps), from
  Micikevicius et al. 2018, Sec. 3.2.
* :func:`log_softmax` is ``x - max - log(sum(exp(x - max)))``, finite wherever ``x`` is, where
  ``log(softmax(x))`` returns ``-inf`` once a probability underflows.
* :func:`first_nonfinite` runs layers one at a time and names the first whose output holds an
  inf or NaN: what forward hooks that assert ``isfinite`` do in a framework.

Book: chapters "Softmax numerics in current models" and "CUDA for inference engineers".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def dynamic_loss_scale(overflow, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                       growth_interval=2000):
    """The loss scale in force at each step, and which steps are skipped.

    Parameters
    ----------
    overflow : sequence of bool, shape ``(steps,)``
        Whether step ``t``'s scaled gradients held an inf or NaN.
    init_scale, growth_factor, backoff_factor, growth_interval
        ``torch.amp.GradScaler``'s defaults: 2**16, 2.0, 0.5, 2000.

    Returns
    -------
    scales : ndarray, shape ``(steps,)``, the scale each step's loss was multiplied by
    skipped : ndarray of bool, shape ``(steps,)``, steps whose optimizer update was dropped
    """
    if not (init_scale > 0 and growth_factor > 1 and 0 < backoff_factor < 1):
        raise ValueError("need init_scale > 0, growth_factor > 1 and 0 < backoff_factor < 1, got "
                         f"{init_scale}, {growth_factor}, {backoff_factor}")
    interval = check_positive_int("growth_interval", growth_interval)
    flags = np.asarray(overflow, dtype=bool)
    scales, scale, clean = np.empty(flags.size), float(init_scale), 0
    for t, bad in enumerate(flags):
        scales[t] = scale
        if bad:  # skip the update, back off, restart the count
            scale, clean = scale * backoff_factor, 0
        else:
            clean += 1
            if clean == interval:
                scale, clean = scale * growth_factor, 0
    return scales, flags.copy()


def log_softmax(x, axis=-1):
    """``log(softmax(x))`` computed in the log domain: ``x - m - log(sum(exp(x - m)))``, ``m = max x``.

    Parameters
    ----------
    x : array_like, float; ``axis`` indexes the vocabulary

    Returns
    -------
    ndarray, same shape and float dtype as ``x``
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"log_softmax needs a float array, got dtype {x.dtype}")
    m = np.max(x, axis=axis, keepdims=True)
    return (x - m) - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def first_nonfinite(layers, x):
    """Run ``layers`` in order from ``x``; return the index of the first whose output is not finite.

    Parameters
    ----------
    layers : sequence of callables, each ``array -> array``
    x : ndarray, the input of the first layer

    Returns
    -------
    (index, output) : the first bad layer and its output, or ``(None, final output)``
    """
    if len(layers) == 0:
        raise ValueError("first_nonfinite needs at least one layer, got 0")
    for i, layer in enumerate(layers):
        x = layer(x)
        if not np.all(np.isfinite(x)):
            return i, x
    return None, x
