"""Why attention is built the way it is: the alternatives, in small functions that can be compared.

* :func:`bilinear_scores`: the pre-softmax score ``x_i W_Q (x_j W_K)^T`` with separate or tied
  ``W_Q`` and ``W_K`` (tied: a symmetric, positive semi-definite score matrix);
* :func:`additive_scores`: Bahdanau et al.'s additive score ``v^T tanh(W_1 q_i + W_2 k_j)``;
* :func:`score_flops`: the floating-point operations of the dot-product and additive scores;
* :func:`layer_complexity`: Vaswani et al.'s Table 1 (operations per layer, sequential operations,
  maximum path length) for self-attention, recurrent and convolutional layers;
* :func:`sigmoid_attention` and :func:`sparsemax`: two normalisations that are not the softmax.

Letters as everywhere in mha_kit: ``n`` queries, ``s`` keys, ``d`` width, ``d_h`` head size.

Book: chapter "Why attention looks like this".
"""
from __future__ import annotations

import math

import numpy as np

from .config import check_positive_int

#: Layer types of Vaswani et al. (2017), Table 1, as :func:`layer_complexity` names them.
LAYER_TYPES = ("self-attention", "recurrent", "convolutional", "restricted self-attention")


def _matrix(a, name, ndim=2):
    a = np.asarray(a, dtype=float)
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    return a


def bilinear_scores(x, w_q, w_k=None):
    """Pre-softmax scores ``S = (X W_Q)(X W_K)^T`` of one head, without the ``1/sqrt(d_h)``.

    With ``w_k=None`` the key projection is tied to the query's (``W_K = W_Q``): then
    ``S = X W_Q W_Q^T X^T`` is symmetric (token ``i`` scores ``j`` exactly as ``j`` scores
    ``i``) and positive semi-definite, so ``S_ii >= 0`` and
    ``S_ij <= sqrt(S_ii S_jj)`` (Cauchy-Schwarz): no token scores another higher than both
    score themselves.

    Parameters
    ----------
    x : ndarray, shape (n, d)
    w_q, w_k : ndarray, shape (d, d_h)
        ``w_k=None`` ties the keys to the queries.

    Returns
    -------
    ndarray, shape (n, n)

    Book: chapter "Why attention looks like this", section "Why Q and K get separate projections".
    """
    x, w_q = _matrix(x, "x"), _matrix(w_q, "w_q")
    w_k = w_q if w_k is None else _matrix(w_k, "w_k")
    if w_q.shape != w_k.shape or w_q.shape[0] != x.shape[1]:
        raise ValueError(f"expected w_q and w_k of shape ({x.shape[1]}, d_h), got {w_q.shape} and {w_k.shape}")
    return (x @ w_q) @ (x @ w_k).T  # (n, d_h) @ (d_h, n) -> (n, n)


def additive_scores(q, k, w_1, w_2, v_a):
    """Bahdanau et al.'s additive score ``e_ij = v_a^T tanh(W_1 q_i + W_2 k_j)``.

    Bahdanau, Cho and Bengio (2015) score a decoder state against each encoder annotation with a
    one-hidden-layer network (their eq. 6 and App. A.1.2, there with ``q`` the previous decoder
    state and ``k`` the annotations); ``d_a`` is the width of that hidden layer.

    Parameters
    ----------
    q : ndarray, shape (n, d_q)
    k : ndarray, shape (s, d_k)
    w_1 : ndarray, shape (d_q, d_a)
    w_2 : ndarray, shape (d_k, d_a)
    v_a : ndarray, shape (d_a,)

    Returns
    -------
    ndarray, shape (n, s)

    Book: chapter "Why attention looks like this", section "Dot product against additive attention".
    """
    q, k, w_1, w_2 = (_matrix(a, name) for a, name in ((q, "q"), (k, "k"), (w_1, "w_1"), (w_2, "w_2")))
    v_a = _matrix(v_a, "v_a", ndim=1)
    if w_1.shape != (q.shape[1], v_a.size) or w_2.shape != (k.shape[1], v_a.size):
        raise ValueError(f"expected w_1 of shape ({q.shape[1]}, {v_a.size}) and w_2 of shape "
                         f"({k.shape[1]}, {v_a.size}), got {w_1.shape} and {w_2.shape}")
    hidden = np.tanh((q @ w_1)[:, None, :] + (k @ w_2)[None, :, :])  # (n, 1, d_a) + (1, s, d_a) -> (n, s, d_a)
    return hidden @ v_a  # (n, s, d_a) @ (d_a,) -> (n, s)


def score_flops(kind, n, s, d_h, d_a=None):
    """Floating-point operations of one head's ``n x s`` score matrix (multiply and add count 2).

    * ``"dot"``: ``q_i . k_j`` for every pair: ``2 n s d_h`` (one ``(n, d_h) @ (d_h, s)`` matmul).
    * ``"additive"``: project queries and keys once (``2 n d_h d_a + 2 s d_h d_a``), then per pair
      add the two projections (``d_a``), take ``tanh`` (``d_a``, counted as one operation each)
      and dot with ``v_a`` (``2 d_a``): ``4 n s d_a`` for the pairs. The pairwise part is not a
      matrix product: a ``tanh`` sits between the sum and ``v_a``.

    Parameters
    ----------
    kind : {"dot", "additive"}
    n, s, d_h : int
        Queries, keys, and the width of each query and key.
    d_a : int, optional
        Hidden width of the additive scorer (default ``d_h``).

    Returns
    -------
    int

    Book: chapter "Why attention looks like this", section "Dot product against additive attention".
    """
    n, s, d_h = (check_positive_int(name, v) for name, v in (("n", n), ("s", s), ("d_h", d_h)))
    if kind == "dot":
        return 2 * n * s * d_h
    if kind == "additive":
        d_a = d_h if d_a is None else check_positive_int("d_a", d_a)
        return 2 * (n + s) * d_h * d_a + 4 * n * s * d_a
    raise ValueError(f"kind must be 'dot' or 'additive', got {kind!r}")


def layer_complexity(layer, n, d, kernel_size=3, neighbourhood=None):
    """One row of Vaswani et al.'s Table 1, evaluated for ``n`` tokens of width ``d``.

    ======================== ================ ============ ==================
    layer                    ops per layer    sequential   maximum path length
    ======================== ================ ============ ==================
    self-attention           n^2 d            1            1
    recurrent                n d^2            n            n
    convolutional            k n d^2          1            ceil(log_k n)
    restricted self-attention r n d           1            ceil(n / r)
    ======================== ================ ============ ==================

    The table gives orders (``O(.)``); this returns the products without constants, so rows can
    be compared for one ``n`` and ``d``. The convolutional path is that of dilated convolutions,
    ``log_k n`` (contiguous kernels need ``n / k`` layers).

    Returns
    -------
    dict with int values ``"ops"``, ``"sequential"``, ``"path"``.

    Book: chapter "Why attention looks like this", section "Attention against other layers".
    """
    n, d = check_positive_int("n", n), check_positive_int("d", d)
    k = check_positive_int("kernel_size", kernel_size)
    if layer == "self-attention":
        return {"ops": n * n * d, "sequential": 1, "path": 1}
    if layer == "recurrent":
        return {"ops": n * d * d, "sequential": n, "path": n}
    if layer == "convolutional":
        if k < 2:
            raise ValueError(f"kernel_size must be at least 2 for a logarithmic path, got {k}")
        layers = 1 if n <= k else math.ceil(round(math.log(n, k), 12))  # log_k n, guarded against 3.0000001
        return {"ops": k * n * d * d, "sequential": 1, "path": layers}
    if layer == "restricted self-attention":
        r = check_positive_int("neighbourhood", neighbourhood)
        return {"ops": r * n * d, "sequential": 1, "path": math.ceil(n / r)}
    raise ValueError(f"layer must be one of {LAYER_TYPES}, got {layer!r}")


def sigmoid_attention(q, k, v, bias=None):
    """``sigmoid(Q K^T / sqrt(d_h) + b) V``: each weight in (0, 1), rows not normalised.

    Ramapuram et al. (2024) replace the softmax by an element-wise sigmoid and recommend the bias
    ``b = -ln(s)`` for ``s`` keys (the default here), so that at initialisation a row's weights
    sum to about one instead of ``s / 2``.

    Parameters
    ----------
    q : ndarray, shape (n, d_h)
    k, v : ndarray, shape (s, d_h)
    bias : float, optional
        Added to every score; default ``-ln(s)``.

    Returns
    -------
    output : ndarray, shape (n, d_h)
    weights : ndarray, shape (n, s)

    Book: chapter "Why attention looks like this", section "Why the softmax".
    """
    q, k, v = _matrix(q, "q"), _matrix(k, "k"), _matrix(v, "v")
    if q.shape[1] != k.shape[1] or k.shape[0] != v.shape[0]:
        raise ValueError(f"expected q (n, d_h), k (s, d_h), v (s, d_v), got {q.shape}, {k.shape}, {v.shape}")
    bias = -math.log(k.shape[0]) if bias is None else float(bias)
    weights = 1.0 / (1.0 + np.exp(-(q @ k.T / math.sqrt(q.shape[1]) + bias)))  # (n, s)
    return weights @ v, weights


def sparsemax(z):
    """Sparsemax along the last axis: the Euclidean projection of ``z`` onto the simplex.

    Martins and Astudillo (2016), Algorithm 1: sort ``z`` descending, find the largest ``k`` with
    ``1 + k z_(k) > sum_{j<=k} z_(j)``, set ``tau = (sum_{j<=k} z_(j) - 1) / k`` and return
    ``max(z - tau, 0)``. Rows sum to one like the softmax's, but scores far enough below the
    top get weight exactly zero.

    Parameters
    ----------
    z : array_like, shape (..., s)

    Returns
    -------
    ndarray, same shape, non-negative, summing to one along the last axis.

    Book: chapter "Why attention looks like this", section "Why the softmax".
    """
    z = np.asarray(z, dtype=float)
    if z.ndim == 0 or z.shape[-1] == 0 or not np.isfinite(z).all():
        raise ValueError(f"sparsemax needs finite scores along the last axis, got shape {z.shape}")
    z_sorted = -np.sort(-z, axis=-1)  # (..., s), descending
    ks = np.arange(1, z.shape[-1] + 1)
    cumulative = np.cumsum(z_sorted, axis=-1)
    support = 1 + ks * z_sorted > cumulative  # (..., s): True for the first k(z) entries
    k_z = support.sum(axis=-1, keepdims=True)
    tau = (np.take_along_axis(cumulative, k_z - 1, axis=-1) - 1) / k_z
    return np.maximum(z - tau, 0.0)
