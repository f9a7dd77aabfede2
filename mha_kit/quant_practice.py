"""Quantization practice: GPTQ's knobs, llama.cpp's importance matrix, Hadamard rotations, eval noise.

A weight matrix ``w`` has shape ``(d_out, d_in)`` as in :mod:`mha_kit.weight_quant`; a Hessian ``h``
has shape ``(d_in, d_in)``. Everything is float64 numpy (1.25 features only), so the browser edition
runs it.

Book: chapter "Weight quantization for serving".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int
from .weight_quant import quantize_weights


def gptq_hessian_quantize(w, h, bits, group_size=None, damp=0.01, act_order=False, static_groups=False):
    """GPTQ on a given Hessian, with the reference's guards: dead inputs, damping, act-order, groups.

    As IST-DASLab/gptq ``GPTQ.fasterquant``: inputs with ``h[j, j] == 0`` get ``h[j, j] = 1`` and zero
    weights; ``damp * mean(diag h)`` is added to the diagonal (``percdamp``); with ``act_order`` the
    columns are quantized in decreasing ``diag(h)``. Asymmetric grid, one scale per output row and
    group; a group's scale is set from the (updated) weights when its first column is reached, in the
    processing order, or, with ``static_groups``, from the original columns ``k*g .. (k+1)*g - 1``.

    Parameters
    ----------
    w : ndarray, shape (d_out, d_in)
    h : ndarray, shape (d_in, d_in)
        ``2 X^T X`` of the calibration inputs (any positive factor gives the same result).
    bits : int
    group_size : int or None
        Columns per scale; ``None``: one scale per row.
    damp : float >= 0
    act_order, static_groups : bool

    Returns
    -------
    q : ndarray, shape (d_out, d_in)
        Dequantized weights in the original column order.
    g_idx : ndarray of int64, shape (d_in,)
        The scale group of each original column (``arange(d_in) // g`` unless act-order regroups them).

    Raises ``numpy.linalg.LinAlgError`` when the damped Hessian is not positive definite.
    """
    w, h = np.array(w, dtype=np.float64), np.array(h, dtype=np.float64)
    d_in = w.shape[1] if w.ndim == 2 else -1
    g = d_in if group_size is None else check_positive_int("group_size", group_size)
    if h.shape != (d_in, d_in) or d_in % g or damp < 0:
        raise ValueError(f"h must be (d_in, d_in) for w {w.shape}, group_size must divide d_in and damp >= 0, "
                         f"got h {h.shape}, group_size={group_size!r}, damp={damp!r}")
    dead = np.diag(h) == 0
    h[dead, dead], w[:, dead] = 1.0, 0.0  # GPTQ: an input never seen costs nothing and gets weight 0
    static = [quantize_weights(w[:, k:k + g], bits, None, False)[1:] for k in range(0, d_in, g)]
    perm = np.argsort(-np.diag(h), kind="stable") if act_order else np.arange(d_in)
    w, h = w[:, perm], h[np.ix_(perm, perm)]
    h[np.diag_indices(d_in)] += damp * np.mean(np.diag(h))
    l_inv = np.linalg.inv(np.linalg.cholesky(h))  # h = L L^T, so h^-1 = L^-T L^-1
    u = np.linalg.cholesky(l_inv.T @ l_inv).T  # upper factor: u^T u = h^-1
    q, g_idx = np.empty_like(w), np.empty(d_in, dtype=np.int64)
    for i in range(d_in):
        if static_groups or i % g == 0:
            g_idx[i] = perm[i] // g if static_groups else i // g
            scale, zero = static[g_idx[i]] if static_groups else quantize_weights(w[:, i:i + g], bits, None, False)[1:]
            scale, zero = scale[:, 0, 0], zero[:, 0, 0]  # (d_out,)
        else:
            g_idx[i] = g_idx[i - 1]
        q[:, i] = scale * (np.clip(np.rint(w[:, i] / scale) + zero, 0, 2**bits - 1) - zero)
        w[:, i + 1:] -= np.outer((w[:, i] - q[:, i]) / u[i, i], u[i, i + 1:])
    inverse = np.argsort(perm)
    return q[:, inverse], g_idx[inverse]


def imatrix_quantize(w, importance=None, bits=4, block=32, n_grid=16):
    """Symmetric block quantization whose scale minimises an importance-weighted rounding error.

    For each block of ``block`` weights along ``d_in`` the scale ``t * amax / (2**(bits-1) - 1)`` is
    chosen among ``n_grid`` values of ``t`` in ``[0.7, 1]`` to minimise
    ``sum_j importance_j * (w_j - scale * round(w_j / scale))**2``: llama.cpp's use of an importance
    matrix (the mean squared activation of each input column, ``llama-imatrix``), simplified to
    these weights and one scale per block. ``importance=None`` weighs every column alike.

    Parameters
    ----------
    w : ndarray, shape (d_out, d_in), d_in a multiple of ``block``
    importance : ndarray, shape (d_in,), non-negative, or None

    Returns
    -------
    ndarray, shape (d_out, d_in): the dequantized weights.
    """
    w = np.asarray(w, dtype=np.float64)
    block, top = check_positive_int("block", block), 2 ** (check_positive_int("bits", bits) - 1) - 1
    imp = np.ones(w.shape[-1]) if importance is None else np.asarray(importance, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] % block or imp.shape != (w.shape[1],) or (imp < 0).any():
        raise ValueError(f"w must be (d_out, d_in) with d_in a multiple of block={block} and importance "
                         f"(d_in,) and >= 0, got w {w.shape} and importance {imp.shape}")
    wb = w.reshape(w.shape[0], -1, block)  # (d_out, n_blocks, block)
    ib = imp.reshape(1, -1, block)  # (1, n_blocks, block)
    amax = np.maximum(np.abs(wb).max(axis=-1, keepdims=True), 1e-12)
    trials = [t * amax / top for t in np.linspace(0.7, 1.0, n_grid)]
    deq = [np.clip(np.rint(wb / s), -top, top) * s for s in trials]  # each (d_out, n_blocks, block)
    err = np.stack([np.sum(ib * (d - wb) ** 2, axis=-1) for d in deq])  # (n_grid, d_out, n_blocks)
    best = np.argmin(err, axis=0)[None, ..., None]  # (1, d_out, n_blocks, 1)
    return np.take_along_axis(np.stack(deq), best, axis=0)[0].reshape(w.shape)


def hadamard_rotate(x, signs=None):
    """``x @ (diag(signs) H_n / sqrt(n))`` on the last axis: a (randomised) Hadamard rotation.

    ``H_n`` is Sylvester's Hadamard matrix (entries +-1, ``n`` a power of two), applied by the fast
    Walsh-Hadamard transform in ``n log2 n`` additions; divided by ``sqrt(n)`` it is orthogonal, so
    ``hadamard_rotate`` keeps norms and dot products (QuaRot's rotation; ``signs`` of +-1 randomise it).

    Parameters
    ----------
    x : ndarray, shape (..., n)
    signs : ndarray of +-1, shape (n,), or None

    Returns
    -------
    ndarray of float64, shape of ``x``
    """
    y = np.array(x, dtype=np.float64)
    n = y.shape[-1] if y.ndim else 0
    if n < 1 or n & (n - 1):
        raise ValueError(f"the last axis must be a power of two, got {y.shape}")
    if signs is not None:
        signs = np.asarray(signs, dtype=np.float64)
        if signs.shape != (n,) or not np.all(np.abs(signs) == 1):
            raise ValueError(f"signs must be {n} values of +1 or -1, got shape {signs.shape}")
        y = y * signs
    h = 1
    while h < n:  # one butterfly stage: pairs (a, b) at distance h become (a + b, a - b)
        y = y.reshape(*y.shape[:-1], n // (2 * h), 2, h)  # (..., blocks, 2, h)
        y = np.stack([y[..., 0, :] + y[..., 1, :], y[..., 0, :] - y[..., 1, :]], axis=-2).reshape(*y.shape[:-3], n)
        h *= 2
    return y / np.sqrt(n)


def accuracy_stderr(p, n):
    """Standard error ``sqrt(p (1 - p) / n)`` of an accuracy ``p`` measured on ``n`` independent questions."""
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    return float(np.sqrt(p * (1 - p) / check_positive_int("n", n)))


def paired_diff_stderr(lost, gained, n):
    """Standard error of the accuracy change of a model against a baseline on the same ``n`` questions.

    Per question the change is -1 (right to wrong, a fraction ``lost``), +1 (``gained``) or 0, so its
    variance is ``lost + gained - (gained - lost)**2`` and the mean's standard error that over ``n``,
    square-rooted: only the answers that flip add noise.
    """
    if lost < 0 or gained < 0 or lost + gained > 1:
        raise ValueError(f"lost and gained must be >= 0 with lost + gained <= 1, got {lost!r} and {gained!r}")
    return float(np.sqrt((lost + gained - (gained - lost) ** 2) / check_positive_int("n", n)))
