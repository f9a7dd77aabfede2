"""Positions that depend on content: Transformer-XL's four score terms and CoPE's counted positions.

* :func:`xl_score_terms`: Transformer-XL's relative score split into content-content,
  content-position, a global content bias and a global position bias (Dai et al., arXiv:1901.02860
  sec. 3.3, terms (a)-(d));
* :func:`cope_positions`: Contextual Position Encoding's position of key ``j`` seen from query
  ``i``, ``p_ij = sum_{t=j..i} sigmoid(q_i . k_t)`` (Golovneva et al., arXiv:2405.18719 sec. 3): a
  count of the tokens the query's gates open on, so a head can count sentences instead of tokens;
* :func:`cope_position_logits`: the position term ``q_i . e[p_ij]``, interpolated between the two
  integer positions around a fractional ``p_ij``.

Book: chapter "Position encodings compared", section "Positions that depend on content".
"""
from __future__ import annotations

import numpy as np


def _qk(q, k):
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    if q.ndim != 2 or k.ndim != 2 or q.shape != k.shape:
        raise ValueError(f"q and k must both be (n, d_h) for one head, got {q.shape} and {k.shape}")
    return q, k


def xl_score_terms(q_content, k_content, r, u, v):
    """Transformer-XL's four score terms for one head, each ``(n, n)``; their sum is the score.

    Parameters
    ----------
    q_content, k_content : arrays, shape (n, d_h)
        ``W_q E_x`` and ``W_{k,E} E_x``: the tokens' content query and key.
    r : array, shape (n, d_h)
        ``W_{k,R} R_delta`` for ``delta = 0 .. n-1``: the key of a relative distance.
    u, v : arrays, shape (d_h,)
        The learned global content and position biases that replace the query's position.

    Returns
    -------
    (a, b, c, d) : content-content, content-position, global content bias, global position bias;
        entry ``[i, j]`` uses distance ``i - j`` (``0`` above the diagonal, which causal masking hides).
    """
    q, kc = _qk(q_content, k_content)
    r, u, v = np.asarray(r, dtype=float), np.asarray(u, dtype=float), np.asarray(v, dtype=float)
    n, dh = q.shape
    if r.shape != (n, dh) or u.shape != (dh,) or v.shape != (dh,):
        raise ValueError(f"r must be ({n}, {dh}) and u, v ({dh},), got {r.shape}, {u.shape}, {v.shape}")
    dist = np.maximum(np.arange(n)[:, None] - np.arange(n)[None, :], 0)  # (n, n): i - j, clipped at 0
    rel = r[dist]  # (n, n, d_h): the key of each pair's distance
    a = q @ kc.T  # (n, d_h) @ (d_h, n) -> (n, n)
    b = np.einsum("id,ijd->ij", q, rel)
    c = np.broadcast_to(kc @ u, (n, n))  # same for every query: a key's global salience
    d = rel @ v  # (n, n): a distance's global preference
    return a, b, c, d


def cope_positions(q, k):
    """CoPE positions ``p[i, j] = sum_{t=j..i} sigmoid(q_i . k_t)`` for ``j <= i``, 0 above the diagonal.

    Parameters
    ----------
    q, k : arrays, shape (n, d_h)

    Returns
    -------
    ndarray, shape (n, n): fractional, non-increasing along a row from ``j = 0`` to ``j = i``.
    """
    q, k = _qk(q, k)
    n = q.shape[0]
    gates = np.tril(1.0 / (1.0 + np.exp(-(q @ k.T))))  # (n, n): g_it, zero for t > i
    return np.cumsum(gates[:, ::-1], axis=1)[:, ::-1] * np.tri(n)  # suffix sums over t = j..i


def cope_position_logits(q, positions, pos_emb):
    """The position term ``q_i . e[p_ij]``, ``e`` interpolated linearly between integer positions.

    CoPE computes ``z_i[p] = q_i . e[p]`` for every integer ``p <= p_max`` (one ``(n, d_h) @ (d_h,
    p_max + 1)`` product) and interpolates the logits, not the vectors: the same number, cheaper.
    Positions beyond ``p_max = len(pos_emb) - 1`` are clipped to it.

    Parameters
    ----------
    q : array, shape (n, d_h)
    positions : array, shape (n, n), non-negative (from :func:`cope_positions`)
    pos_emb : array, shape (p_max + 1, d_h)
    """
    q, e = np.asarray(q, dtype=float), np.asarray(pos_emb, dtype=float)
    p = np.asarray(positions, dtype=float)
    if q.ndim != 2 or e.ndim != 2 or e.shape[1] != q.shape[1] or p.shape != (q.shape[0],) * 2 or np.any(p < 0):
        raise ValueError(f"need q (n, d_h), positions (n, n) >= 0 and pos_emb (p_max + 1, d_h), got {q.shape}, "
                         f"{p.shape}, {e.shape}")
    p = np.minimum(p, e.shape[0] - 1)
    z = q @ e.T  # (n, d_h) @ (d_h, p_max + 1) -> (n, p_max + 1)
    lo = np.floor(p).astype(np.intp)  # (n, n)
    hi = np.minimum(lo + 1, e.shape[0] - 1)
    frac = p - lo
    return (1 - frac) * np.take_along_axis(z, lo, axis=1) + frac * np.take_along_axis(z, hi, axis=1)
