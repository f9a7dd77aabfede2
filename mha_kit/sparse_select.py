"""Per-query selection and stage balancing: a top-c causal mask, and contiguous pipeline stages.

Two small algorithms that interview coding rounds ask for. ``indegree_topk_mask`` keeps, for each
query position ``j``, only the ``c_j`` highest-scoring keys at or before ``j`` (the token-level
selection that DeepSeek Sparse Attention makes with its indexer's scores). ``balanced_stages``
splits a chain of layers with measured costs into ``p`` contiguous pipeline stages so that the
slowest stage, which sets a pipeline's throughput, is as fast as possible.

>>> import numpy as np, mha_kit as mk
>>> mk.indegree_topk_mask(np.array([[1., 0.], [2., 3.]]), [1, 1]).astype(int).tolist()
[[1, 0], [0, 1]]
>>> mk.balanced_stages([1, 1, 1, 1, 2], 2)
(3, 2)
"""
from __future__ import annotations

import numpy as np


def indegree_topk_mask(scores, budgets):
    """Keep each query's ``c_j`` best keys among positions ``0..j`` (a causal top-k mask).

    Row ``j`` keeps ``min(c_j, j + 1)`` keys; ties go to the earlier key (a stable sort), so
    the mask is deterministic. Cost: ``O(n^2)`` to mask plus ``O(n^2 log n)`` for the row sorts
    here (``O(n^2)`` expected with a selection such as ``np.argpartition``).

    Parameters
    ----------
    scores : array, shape (n, n)
        Attention logits, query rows and key columns; entries above the diagonal are ignored.
    budgets : sequence of int, length n
        ``c_j >= 1`` for every query.

    Returns
    -------
    keep : bool array, shape (n, n), lower-triangular, ``min(c_j, j + 1)`` True entries in row ``j``
    """
    s = np.asarray(scores, dtype=float)
    c = np.asarray(budgets)
    if s.ndim != 2 or s.shape[0] != s.shape[1] or c.shape != (s.shape[0],):
        raise ValueError(f"scores must be square (n, n) and budgets (n,), got {s.shape} and {c.shape}")
    if not np.issubdtype(c.dtype, np.integer) or np.any(c < 1):
        raise ValueError(f"each budget c_j must be an integer >= 1, got {c.tolist()}")
    n = s.shape[0]
    masked = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)  # (n, n): future = -inf
    order = np.argsort(-masked, axis=1, kind="stable")  # (n, n): best key first, earlier on ties
    k = np.minimum(c, np.arange(1, n + 1))  # (n,): a row has only j + 1 candidates
    keep = np.zeros((n, n), dtype=bool)
    rows = np.repeat(np.arange(n), k)  # one entry per kept key
    cols = np.concatenate([order[j, :kj] for j, kj in enumerate(k)])
    keep[rows, cols] = True
    return keep


def balanced_stages(layer_costs, num_stages):
    """Split a chain of layers into contiguous stages minimising the slowest stage's cost.

    The linear-partition dynamic program: ``best[i][s]`` is the smallest possible maximum over
    ``s`` stages holding the first ``i`` layers; ``O(L^2 p)`` time for ``L`` layers.

    Parameters
    ----------
    layer_costs : sequence of float, length L
        Measured (or modelled) time of each layer, in order; each > 0.
    num_stages : int
        ``p``, with ``1 <= p <= L``.

    Returns
    -------
    counts : tuple of int, length p, the number of layers in each stage, summing to L
    """
    w = np.asarray(layer_costs, dtype=float)
    p = num_stages
    if w.ndim != 1 or w.size == 0 or np.any(w <= 0):
        raise ValueError(f"layer_costs must be a non-empty 1-D list of positive costs, got {w.tolist()}")
    if not isinstance(p, (int, np.integer)) or not 1 <= p <= w.size:
        raise ValueError(f"num_stages must be an integer with 1 <= p <= L = {w.size}, got {p}")
    pre = np.concatenate([[0.0], np.cumsum(w)])  # (L + 1,): prefix sums
    n = w.size
    best = np.full((n + 1, p + 1), np.inf)
    cut = np.zeros((n + 1, p + 1), dtype=int)
    best[0, 0] = 0.0
    for s in range(1, p + 1):
        for i in range(s, n + 1):
            cand = np.maximum(best[s - 1:i, s - 1], pre[i] - pre[s - 1:i])  # last stage = layers m..i-1
            m = int(np.argmin(cand))
            best[i, s], cut[i, s] = cand[m], m + s - 1
    counts, i = [], n
    for s in range(p, 0, -1):
        counts.append(i - cut[i, s])
        i = cut[i, s]
    return tuple(int(x) for x in counts[::-1])
