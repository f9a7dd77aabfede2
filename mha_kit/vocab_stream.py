"""Log-probabilities and entropy of a softmax over a large vocabulary, in one pass over chunks.

The online normaliser (Milakov and Gimelshein, arXiv:1805.02867 sec. 3) keeps a running maximum
``m`` and ``S = sum exp(x - m)``, rescaling ``S`` by ``exp(m_old - m_new)`` when a chunk raises
the maximum. One more accumulator, ``T = sum x exp(x - m)``, rescaled the same way, gives the
entropy: ``H = log Z - E_p[x] = log Z - T / S`` with ``log Z = m + log S``. Nothing larger than
one chunk is held, and no exponential of a positive number is taken.

Book: chapter "Softmax numerics in current models", section "Log-probability and entropy over a
vocabulary, streamed".
"""
from __future__ import annotations

import numpy as np


def stream_logz_entropy(chunks):
    """``(log Z, H)`` of ``softmax(concatenate(chunks))`` from one pass over the chunks.

    Parameters
    ----------
    chunks : iterable of 1-D arrays
        The logits in pieces (e.g. 32,768 vocabulary entries at a time); each piece finite and non-empty.

    Returns
    -------
    log_z : float
        ``log sum exp(x)``; the log-probability of token ``t`` is ``x_t - log_z``.
    entropy : float
        In nats, between 0 and ``log(V)``.
    """
    m, s, t, seen = -np.inf, 0.0, 0.0, 0
    for i, chunk in enumerate(chunks):
        x = np.asarray(chunk, dtype=np.float64)
        if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
            raise ValueError(f"chunk {i} must be a finite, non-empty 1-D array, got shape {x.shape}")
        m_new = max(m, float(x.max()))
        scale = np.exp(m - m_new)  # 0 on the first chunk (m = -inf), else <= 1
        w = np.exp(x - m_new)  # (chunk,) every exponent <= 0
        s, t = s * scale + float(w.sum()), t * scale + float(np.dot(w, x))  # S, T against the new m
        m, seen = m_new, seen + x.size
    if not seen:
        raise ValueError("chunks must hold at least one logit, got none")
    log_z = m + float(np.log(s))
    return log_z, log_z - t / s  # H = log Z - E_p[x], E_p[x] = T / S
