"""Quantization-aware training in miniature: fake quantization in the forward pass, a straight-through gradient.

The forward pass multiplies by ``Q(w)``, the rounded weights (``fake_quantize``); rounding has zero
gradient almost everywhere, so the backward pass treats it as the identity (the straight-through
estimator, Bengio et al. 2013) and the gradient with respect to ``Q(w)`` updates the full-precision
``w`` that training keeps. The loss here is the squared distance of the layer's output from a
teacher's output ``x @ w_teacher.T``: distillation of one layer, the smallest case of what
quantization-aware distillation does with a whole model's logits.

Book: chapter "Weight quantization for serving", section "QAT and QAD".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int
from .weight_quant import quantize_weights


def qat_linear(w_teacher, x, bits, group_size=None, steps=500, lr=0.002):
    """Train the latent weights of one quantized linear layer to match a full-precision teacher.

    The scales are the teacher's (symmetric absmax grid) and stay frozen while the latent weights
    move, as NVIDIA's Model Optimizer does in QAT; the loss is the mean squared output error,
    ``tr(E H E.T)`` with ``E = Q(w) - w_teacher`` and ``H = x.T x / n``. The latent weights drift
    once the rounding stops changing, so the best iterate by that loss is returned (early stopping).

    Parameters
    ----------
    w_teacher : ndarray, shape (d_out, d_in)
        The full-precision weights; also the starting point of the latent weights.
    x : ndarray, shape (n, d_in)
        Training inputs.
    bits, group_size
        The symmetric grid of :func:`mha_kit.quantize_weights` (``None``: one scale per output row).
    steps : int
        Full-batch gradient steps.
    lr : float
        Step size as a fraction of ``1 / L``, ``L`` the largest eigenvalue of ``2 H`` (the loss's
        curvature), so one value suits any scale of ``x``.

    Returns
    -------
    ndarray, shape (d_out, d_in)
        ``Q(w)`` at the best step: the weights the quantized layer serves with.
    """
    steps = check_positive_int("steps", steps)
    if not 0 < lr <= 1:
        raise ValueError(f"lr must be in (0, 1] (a fraction of 1/L), got {lr!r}")
    teacher = np.asarray(w_teacher, dtype=np.float64)  # (d_out, d_in)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != teacher.shape[1]:
        raise ValueError(f"x must have shape (n, {teacher.shape[1]}), got {x.shape}")
    codes, scale, zero = quantize_weights(teacher, bits, group_size)  # scale: (d_out, n_groups, 1), frozen
    top = 2 ** (bits - 1) - 1  # bits already checked by quantize_weights

    def rounded(w):  # forward pass: the grid with the teacher's scales
        g = w.reshape(scale.shape[0], scale.shape[1], -1)  # (d_out, n_groups, g)
        return (np.clip(np.rint(g / scale), -top, top) * scale).reshape(w.shape)

    h = x.T @ x / len(x)  # (d_in, d_in)
    step = lr / (2 * np.linalg.eigvalsh(h).max())
    w, best, best_loss = teacher.copy(), rounded(teacher), np.inf
    for _ in range(steps):
        err = rounded(w) - teacher  # (d_out, d_in)
        err_h = err @ h  # (d_out, d_in): one product serves the loss and the gradient 2 err H
        loss = float(np.sum(err_h * err))
        if loss < best_loss:
            best, best_loss = err + teacher, loss
        w -= step * 2 * err_h  # straight-through: dQ(w)/dw taken as 1
    return best
