"""Token trees for speculative decoding, and attention over a prefix shared by a whole batch.

A draft tree is given by a **parent list**: ``parents[i]`` is the tree index of node ``i``'s
parent, or ``-1`` for a node that hangs directly off the last committed token. Nodes are numbered
so that a parent comes before its children (``parents[i] < i``), the order in which SpecInfer,
Medusa and EAGLE-2 lay a tree out as one flat block of query tokens.

* :func:`tree_attention_mask` builds the mask (each node sees the committed prefix, its ancestors
  and itself) and the position ids (prefix length plus depth).
* :func:`tree_paths` lists the root-to-leaf paths; attention over the whole tree with the mask
  equals attention over each path on its own (the test and the chapter check this).
* :func:`accepted_path_slots` gives the gather indices that compact the accepted path's keys and
  values into contiguous cache slots after verification.
* :func:`attention_with_lse` and :func:`cascade_attention` split attention over a shared prefix
  and per-sequence suffixes and merge them by log-sum-exp (cascade attention, Hydragen).

Book: chapter "Tree attention, shared prefixes and inexact caches".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int
from .counting import kv_cache_bytes_per_token
from .flash import merge_softmax_states


def _check_parents(parents):
    parents = np.asarray(parents)
    if parents.ndim != 1 or parents.size == 0 or not np.issubdtype(parents.dtype, np.integer):
        raise ValueError(f"parents must be a non-empty 1-D list of ints, got {parents!r}")
    bad = np.flatnonzero((parents < -1) | (parents >= np.arange(parents.size)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"parents[{i}] ({int(parents[i])}) must be -1 or an earlier node (< {i})")
    return parents.astype(np.int64)


def tree_depths(parents):
    """Depth of each node: 0 for a child of the last committed token, parent's depth + 1 below.

    Parameters
    ----------
    parents : sequence of int, length t
        ``parents[i]`` is ``-1`` or an index ``< i``.

    Returns
    -------
    ndarray of int64, shape (t,)
    """
    parents = _check_parents(parents)
    depth = np.zeros(parents.size, dtype=np.int64)
    for i, p in enumerate(parents):  # parents come first, so one pass suffices
        depth[i] = 0 if p < 0 else depth[p] + 1
    return depth


def tree_attention_mask(parents, prefix_len=0):
    """Mask and position ids for verifying a draft tree in one forward pass.

    Node ``i`` may attend to every committed token (the first ``prefix_len`` keys), to its
    ancestors and to itself, never to a sibling's branch. Its position id is
    ``prefix_len + depth``: every node at depth ``k`` stands for the token at that position on its
    own path, so siblings share a position (SpecInfer sec. 4.2; Medusa sec. 2.1.2).

    Parameters
    ----------
    parents : sequence of int, length t
    prefix_len : int
        Committed tokens already in the cache (0 gives the t x t tree part alone).

    Returns
    -------
    mask : ndarray of bool, shape (t, prefix_len + t)
        True where the query (row) may see the key (column).
    position_ids : ndarray of int64, shape (t,)

    Raises
    ------
    ValueError
        If a parent is not -1 or an earlier node, or ``prefix_len`` is negative.

    Book: chapter "Tree attention, shared prefixes and inexact caches".
    """
    parents = _check_parents(parents)
    if isinstance(prefix_len, bool) or not isinstance(prefix_len, (int, np.integer)) or prefix_len < 0:
        raise ValueError(f"prefix_len must be a non-negative int, got {prefix_len!r}")
    t = parents.size
    tree = np.eye(t, dtype=bool)  # (t, t): each node sees itself
    for i, p in enumerate(parents):  # a node sees what its parent sees, plus itself
        if p >= 0:
            tree[i] |= tree[p]
    mask = np.concatenate([np.ones((t, prefix_len), dtype=bool), tree], axis=1)  # (t, prefix_len + t)
    return mask, prefix_len + tree_depths(parents)


def tree_paths(parents):
    """The root-to-leaf paths of a tree, each a list of node indices in order, leaves in order.

    Returns
    -------
    list of list of int
    """
    parents = _check_parents(parents)
    is_parent = np.zeros(parents.size, dtype=bool)
    is_parent[parents[parents >= 0]] = True
    paths = []
    for leaf in np.flatnonzero(~is_parent):
        path, node = [], int(leaf)
        while node >= 0:
            path.append(node)
            node = int(parents[node])
        paths.append(path[::-1])
    return paths


def accepted_path_slots(parents, accepted, prefix_len):
    """Gather indices that compact an accepted path into contiguous cache slots.

    During verification node ``i``'s key and value are written to slot ``prefix_len + i``. After
    acceptance the path's entries must sit at ``prefix_len, prefix_len + 1, ...`` so the next step
    sees an ordinary contiguous sequence; the rest of the tree's slots are freed.

    Parameters
    ----------
    parents : sequence of int, length t
    accepted : sequence of int
        Accepted nodes from the top of the tree down; each must be the child of the one before
        (the first a child of the committed prefix).
    prefix_len : int

    Returns
    -------
    src, dst : ndarray of int64, shape (len(accepted),)
        ``cache[dst] = cache[src]`` compacts the path (``src >= dst``, so copying in order is safe).

    Raises
    ------
    ValueError
        If ``accepted`` is not a path from the top of the tree.
    """
    parents = _check_parents(parents)
    accepted = [int(a) for a in accepted]
    expected = -1
    for a in accepted:
        if not 0 <= a < parents.size or parents[a] != expected:
            raise ValueError(f"accepted ({accepted}) must be a path down the tree: node {a} is not a child of {expected}")
        expected = a
    src = prefix_len + np.asarray(accepted, dtype=np.int64)
    return src, prefix_len + np.arange(len(accepted), dtype=np.int64)


def attention_with_lse(q, k, v, mask=None):
    """Softmax attention that also returns the log-sum-exp of each query's scores.

    Parameters
    ----------
    q : ndarray, shape (..., n, d_h)
    k, v : ndarray, shape (..., s, d_h)
    mask : ndarray of bool, shape broadcastable to (..., n, s), optional

    Returns
    -------
    out : ndarray, shape (..., n, d_h)
    lse : ndarray, shape (..., n)
        ``log sum_j exp(score_j)``; ``-inf`` for a row that sees no key (its output is 0).
    """
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., n, d_h) @ (..., d_h, s) -> (..., n, s)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = scores.max(axis=-1, keepdims=True)
    shift = np.where(np.isneginf(m), 0.0, m)
    p = np.exp(scores - shift)  # (..., n, s)
    total = p.sum(axis=-1, keepdims=True)
    out = (p @ v) / np.where(total > 0, total, 1.0)
    with np.errstate(divide="ignore"):
        lse = (shift + np.log(total))[..., 0]
    return out, lse


def cascade_attention(q, k_prefix, v_prefix, k_suffix, v_suffix, suffix_mask=None):
    """Attention of a batch over one shared prefix plus each sequence's own suffix.

    The prefix is attended **once for the whole batch**: the ``b * n`` queries are stacked as rows
    of one product against the prefix's keys (a matrix-matrix product, Hydragen sec. 3), each
    sequence then attends to its own suffix, and the two partial results are merged exactly by
    their log-sum-exps (:func:`mha_kit.merge_softmax_states`).

    Parameters
    ----------
    q : ndarray, shape (b, h, n, d_h)
    k_prefix, v_prefix : ndarray, shape (h, p, d_h)
        The shared prefix, stored once.
    k_suffix, v_suffix : ndarray, shape (b, h, s, d_h)
    suffix_mask : ndarray of bool, shape broadcastable to (b, h, n, s), optional

    Returns
    -------
    ndarray, shape (b, h, n, d_h)
    """
    b, h, n, d_h = q.shape
    stacked = np.swapaxes(q, 0, 1).reshape(h, b * n, d_h)  # (b, h, n, d_h) -> (h, b*n, d_h)
    o_p, lse_p = attention_with_lse(stacked, k_prefix, v_prefix)  # one pass over the prefix
    o_p = np.swapaxes(o_p.reshape(h, b, n, d_h), 0, 1)  # (h, b*n, d_h) -> (b, h, n, d_h)
    lse_p = np.swapaxes(lse_p.reshape(h, b, n), 0, 1)  # (b, h, n)
    o_s, lse_s = attention_with_lse(q, k_suffix, v_suffix, suffix_mask)
    _, tot, acc = merge_softmax_states((lse_p, np.ones_like(lse_p), o_p), (lse_s, np.ones_like(lse_s), o_s))
    return acc / tot[..., None]


def shared_prefix_read_bytes(cfg, prefix_len, batch_size, fmt="bf16"):
    """Bytes of the shared prefix's cache read per decode step: per sequence, and once.

    Parameters
    ----------
    cfg : AttentionConfig or LatentAttentionConfig
        All layers count (``cfg.num_layers``).
    prefix_len, batch_size : int
    fmt : str or int
        Cache format (a name or a number of bits).

    Returns
    -------
    per_sequence, once : int
        ``batch_size * prefix_len`` tokens' cache against ``prefix_len`` tokens' cache.
    """
    p = check_positive_int("prefix_len", prefix_len)
    b = check_positive_int("batch_size", batch_size)
    per_token = kv_cache_bytes_per_token(cfg, fmt)
    return b * p * per_token, p * per_token


def tree_expected_length(parents, accept_probs):
    """Expected tokens one verification step yields: accepted tree nodes plus the target's own token.

    Under greedy verification the target's token at a node's depth matches at most one of the
    siblings, so sibling acceptances are exclusive: a node is accepted with the product of the
    conditional probabilities on its path, and the expected count is their sum plus one (the token
    the target produces after the last accepted node). For a chain of ``k`` nodes each accepted
    with probability ``alpha`` this is ``(1 - alpha**(k+1)) / (1 - alpha)``, as
    :func:`mha_kit.speculative_expected_tokens`.

    Parameters
    ----------
    parents : sequence of int, length t
    accept_probs : sequence of float, length t
        Probability that node ``i`` is accepted given that its parent is; siblings' sum at most 1.

    Returns
    -------
    float
    """
    parents = _check_parents(parents)
    p = np.asarray(accept_probs, dtype=np.float64)
    if p.shape != parents.shape or ((p < 0) | (p > 1)).any():
        raise ValueError(f"accept_probs must be {parents.size} probabilities in [0, 1], got {accept_probs!r}")
    sibling_sums = np.bincount((parents + 1).astype(np.intp), weights=p)  # index 0: the top level
    if (sibling_sums > 1 + 1e-12).any():
        raise ValueError(f"siblings' accept_probs must sum to at most 1, got sums {sibling_sums.tolist()}")
    reach = np.empty_like(p)
    for i, parent in enumerate(parents):
        reach[i] = p[i] * (1.0 if parent < 0 else reach[parent])
    return float(1.0 + reach.sum())
