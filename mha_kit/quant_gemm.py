"""Integer GEMM with zero points, LLM.int8()'s decomposition and activation-range calibration (fix5a)."""
import numpy as np


def zero_point_gemm_terms(qx, qw, zx, zw):
    """The four sums of an asymmetric integer GEMM, Jacob et al. (2018) Sec. 2.3, Eq. (7).

    With ``x = s_x (q_x - z_x)`` and ``w = s_w (q_w - z_w)``,
    ``sum_k (q_x - z_x)(q_w - z_w) = main - zw * rowsum(q_x) - zx * colsum(q_w) + K zx zw``.

    Parameters
    ----------
    qx : int array, shape (M, K)
        Activation codes.
    qw : int array, shape (K, N)
        Weight codes.
    zx, zw : int
        Zero points of the activations and of the weights.

    Returns
    -------
    dict of int arrays
        ``main`` (M, N) the integer GEMM, ``x_rowsum`` (M, 1) per token at run time,
        ``w_colsum`` (1, N) per output channel, offline, and ``const`` the scalar ``K zx zw``.
    """
    qx, qw = np.asarray(qx, dtype=np.int64), np.asarray(qw, dtype=np.int64)
    if qx.ndim != 2 or qw.ndim != 2 or qx.shape[1] != qw.shape[0]:
        raise ValueError(f"need qx (M, K) and qw (K, N) with equal K; got {qx.shape} and {qw.shape}")
    return {"main": qx @ qw, "x_rowsum": qx.sum(axis=1, keepdims=True), "w_colsum": qw.sum(axis=0, keepdims=True),
            "const": qx.shape[1] * int(zx) * int(zw)}


def llm_int8_matmul(x, w, threshold=6.0):
    """LLM.int8(): outlier columns in full precision, the rest int8 vector-wise (Dettmers et al. 2022, Sec. 3).

    Parameters
    ----------
    x : array, shape (tokens, K)
    w : array, shape (K, N)
    threshold : float
        A feature dimension k is an outlier when any ``|x[:, k]| >= threshold`` (the paper's 6.0).

    Returns
    -------
    y : array, shape (tokens, N)
        Outlier part in float plus int8 part, with absmax scales per row of x and per column of w.
    outliers : int array
        The outlier feature dimensions.
    """
    x, w = np.asarray(x, dtype=float), np.asarray(w, dtype=float)
    if threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")
    out = np.flatnonzero(np.abs(x).max(axis=0) >= threshold)
    keep = np.setdiff1d(np.arange(x.shape[1]), out)
    xs, ws = x[:, keep], w[keep, :]
    cx = np.maximum(np.abs(xs).max(axis=1, keepdims=True), 1e-12) / 127  # (tokens, 1)
    cw = np.maximum(np.abs(ws).max(axis=0, keepdims=True), 1e-12) / 127  # (1, N)
    int_part = (np.round(xs / cx) @ np.round(ws / cw)) * cx * cw
    return x[:, out] @ w[out, :] + int_part, out


def calibration_amax(samples, method="max", percentile=99.99):
    """The clipping range ``amax`` a static activation scale is calibrated to (Wu et al. 2020, Sec. 4.2).

    ``method`` is ``"max"`` (largest magnitude seen) or ``"percentile"`` (that percentile of the magnitudes).
    """
    a = np.abs(np.asarray(samples, dtype=float)).ravel()
    if method == "max":
        return float(a.max())
    if method == "percentile":
        if not 0 < percentile <= 100:
            raise ValueError(f"percentile must be in (0, 100], got {percentile}")
        return float(np.percentile(a, percentile))
    raise ValueError(f"method must be 'max' or 'percentile', got {method!r}")
