"""FlashAttention's idea in NumPy: attention over key blocks with an online softmax.

The scores of one block of keys are computed, folded into three running quantities per query
row, and thrown away, so the ``n x s`` matrix of scores is never held:

* ``m``, the largest score seen so far,
* ``l``, the sum of ``exp(score - m)`` over the keys seen so far,
* ``acc``, the sum of ``exp(score - m) * value`` over the keys seen so far.

When a block raises the maximum from ``m`` to ``m_new``, everything summed before is rescaled
by ``exp(m - m_new)``; after the last block ``acc / l`` is the softmax-weighted mix of values.
This is the decomposition of Dao et al. (2022, sec. 3.1), here for one pass over the keys;
the GPU kernel also tiles the queries so that each tile fits in on-chip SRAM.

The three quantities are the *state* of a set of keys, and two states of disjoint sets merge into
the state of their union (:func:`merge_softmax_states`, the one place that rescaling is written).
Flash-Decoding (:func:`flash_decoding`) splits a decode step's keys into chunks, keeps each
chunk's output and log-sum-exp, and merges them with the same function.

Book: chapters "What attention costs" and "FlashAttention-2 and Flash-Decoding".
"""
from __future__ import annotations

import numpy as np

from .attention import _check_mask, _check_qkv, scaled_dot_product_attention
from .config import check_positive_int


def merge_softmax_states(state_a, state_b):
    """Merge the softmax states of two disjoint sets of keys into the state of their union.

    A state ``(m, l, acc)`` holds the largest score ``m``, ``l = sum exp(score - m)`` and
    ``acc = sum exp(score - m) * value`` of its keys. The state of the union takes the larger
    maximum and rescales each side by ``exp(m_side - m)``, at most 1, so nothing overflows.

    A state is defined up to a shift: ``(m + c, l e^-c, acc e^-c)`` describes the same keys. A
    partial output ``o`` with its log-sum-exp ``L`` (what a Flash-Decoding split writes) is
    therefore the state ``(L, 1, o)``. Merging is commutative and associative.

    Parameters
    ----------
    state_a, state_b : tuple of ndarray
        ``(m, l, acc)`` with shapes ``(..., n)``, ``(..., n)``, ``(..., n, d_v)``. A row that
        saw no key has ``m = -inf``, ``l = 0``, ``acc = 0``.

    Returns
    -------
    m, l, acc : ndarray, the state of both sets of keys.

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    m = np.maximum(m_a, m_b)  # (..., n)
    # A row that has seen no key on either side keeps m = -inf; shifting by 0 instead keeps
    # exp(-inf) = 0 and avoids -inf - (-inf) = NaN.
    shift = np.where(np.isneginf(m), 0.0, m)
    alpha, beta = np.exp(m_a - shift), np.exp(m_b - shift)  # each at most 1
    return m, alpha * l_a + beta * l_b, alpha[..., None] * acc_a + beta[..., None] * acc_b


def online_softmax_update(m, l, acc, scores, v_block):
    """Fold one block of scores and its values into the running ``(m, l, acc)``.

    The block's own state (its maximum, sum of exponentials and weighted values) is merged
    into the running one with :func:`merge_softmax_states`.

    Parameters
    ----------
    m, l : ndarray, shape (..., n)
        Running maximum (``-inf`` before any allowed key) and running sum of exponentials.
    acc : ndarray, shape (..., n, d_v)
        Running sum of ``exp(score - m) * value``.
    scores : ndarray, shape (..., n, b)
        This block's scores; masked keys are ``-inf``.
    v_block : ndarray, shape (..., b, d_v)

    Returns
    -------
    m_new, l_new, acc_new : same shapes as ``m``, ``l``, ``acc``.
    """
    m_block = scores.max(axis=-1)  # (..., n)
    shift = np.where(np.isneginf(m_block), 0.0, m_block)  # a fully masked row: exp(-inf - 0) = 0
    p = np.exp(scores - shift[..., None])  # (..., n, b), zero where masked
    block = (m_block, p.sum(axis=-1), p @ v_block)  # (..., n, b) @ (..., b, d_v) -> (..., n, d_v)
    return merge_softmax_states((m, l, acc), block)


def flash_attention(q, k, v, mask=None, block_size=64):
    """Exact ``softmax(q k^T / sqrt(d_h)) v`` computed ``block_size`` keys at a time.

    Same inputs and output as :func:`mha_kit.scaled_dot_product_attention` (its first return
    value), without the weights: the ``n x s`` score matrix is never formed, only ``n x
    block_size`` scores at a time. The last block may be shorter.

    Parameters
    ----------
    q : ndarray, shape (..., n, d_h)
    k : ndarray, shape (..., s, d_h)
    v : ndarray, shape (..., s, d_v)
    mask : ndarray of bool, broadcastable to (..., n, s), optional
        ``True`` where attention is allowed (the convention of :func:`mha_kit.causal_mask`).
    block_size : int
        Keys per block, at least 1.

    Returns
    -------
    out : ndarray, shape (..., n, d_v)

    A query row with no allowed key has no softmax; such rows are handed to
    :func:`mha_kit.scaled_dot_product_attention`, so they behave exactly as there (today it
    raises ``ValueError``). Scores that are NaN or ``+inf`` raise ``ValueError`` as there.

    Book: chapter "What attention costs".
    """
    q, k, v = (np.asarray(a) for a in (q, k, v))
    _check_qkv(q, k, v)
    b = check_positive_int("block_size", block_size)
    shape = _scores_shape(q, k, v)  # (..., n, s)
    if mask is not None:  # a mask may add leading dimensions, as in the reference
        shape = np.broadcast_shapes(_check_mask(mask, shape).shape, shape)
        mask = np.broadcast_to(mask, shape)
    dtype = np.result_type(q.dtype, k.dtype, v.dtype, np.float32)
    m = np.full(shape[:-1], -np.inf, dtype)  # (..., n)
    l = np.zeros(shape[:-1], dtype)
    acc = np.zeros(shape[:-1] + (v.shape[-1],), dtype)  # (..., n, d_v)
    for start in range(0, shape[-1], b):
        scores = _block_scores(q, k[..., start:start + b, :], None if mask is None else mask[..., start:start + b])
        m, l, acc = online_softmax_update(m, l, acc, scores, v[..., start:start + b, :])
    if (l == 0).any():  # some row had no allowed key
        return _with_reference_rows(acc, l, q, k, v, mask, shape)
    return acc / l[..., None]


def _scores_shape(q, k, v):
    """``(..., n, s)``: the shape of the scores, leading dimensions broadcast as matmul does."""
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"leading (batch, head) dimensions of q {q.shape}, k {k.shape} and v {v.shape} "
                         "do not broadcast") from None
    return batch + (q.shape[-2], k.shape[-2])


def _block_scores(q, k_block, mask_block, caller="flash_attention"):
    """Scaled scores of one key block, ``-inf`` where the mask forbids."""
    scores = q @ np.swapaxes(k_block, -1, -2) / np.sqrt(q.shape[-1])  # (..., n, d_h) @ (..., d_h, b) -> (..., n, b)
    if mask_block is not None:
        scores = np.where(mask_block, scores, -np.inf)
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise ValueError(f"{caller}: scores contain NaN or +inf (as softmax, it refuses them)")
    return scores


def _with_reference_rows(acc, l, q, k, v, mask, shape):
    """Finish the rows that saw keys; take the rows that saw none from the reference."""
    empty = l == 0  # (..., n)
    out = acc / np.where(empty, 1, l)[..., None]
    rows = np.nonzero(empty)  # indices over (..., n)
    batch = shape[:-2]
    q_rows = np.broadcast_to(q, batch + q.shape[-2:])[rows][:, None, :]  # (r, 1, d_h)
    k_rows = np.broadcast_to(k, batch + k.shape[-2:])[rows[:-1]]  # (r, s, d_h)
    v_rows = np.broadcast_to(v, batch + v.shape[-2:])[rows[:-1]]  # (r, s, d_v)
    mask_rows = None if mask is None else mask[rows][:, None, :]  # (r, 1, s)
    out[rows] = scaled_dot_product_attention(q_rows, k_rows, v_rows, mask_rows)[0][:, 0, :]
    return out


# --- Flash-Decoding: split the keys, keep each split's log-sum-exp, merge (chapter "FlashAttention-2 and
# Flash-Decoding") ---

def split_bounds(num_keys, num_splits):
    """``num_splits + 1`` boundaries cutting ``num_keys`` keys into contiguous splits.

    Split ``i`` holds keys ``bounds[i]:bounds[i + 1]``; sizes differ by at most one and none is
    empty, so ``num_splits`` may not exceed ``num_keys``. ``split_bounds(10, 4) -> [0, 2, 5, 7, 10]``.
    """
    s, splits = check_positive_int("num_keys", num_keys), check_positive_int("num_splits", num_splits)
    if splits > s:
        raise ValueError(f"num_splits ({splits}) must not exceed the number of keys s ({s}): every split needs a key")
    return [i * s // splits for i in range(splits + 1)]


def flash_decoding_partials(q, k, v, num_splits):
    """The split step of Flash-Decoding: each split's attention output and its log-sum-exp.

    The keys and values are cut into ``num_splits`` contiguous chunks (:func:`split_bounds`);
    each chunk is attended on its own, as one thread block of the GPU kernel would, and keeps
    ``lse = m + log(l)``, the log of its softmax denominator. No mask: every query sees every
    key, as in a decode step (several query rows are the packed query heads of one KV head).

    Parameters
    ----------
    q : ndarray, shape (..., n, d_h)
    k : ndarray, shape (..., s, d_h)
    v : ndarray, shape (..., s, d_v)
    num_splits : int
        Between 1 and ``s``.

    Returns
    -------
    out : ndarray, shape (num_splits, ..., n, d_v)
        Each split's softmax-weighted mix of its own values.
    lse : ndarray, shape (num_splits, ..., n)

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    q, k, v = (np.asarray(a) for a in (q, k, v))
    _check_qkv(q, k, v)
    bounds = split_bounds(k.shape[-2], num_splits)
    shape = _scores_shape(q, k, v)[:-1]  # (..., n)
    dtype = np.result_type(q.dtype, k.dtype, v.dtype, np.float32)
    outs, lses = [], []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        scores = _block_scores(q, k[..., start:stop, :], None, caller="flash_decoding")  # (..., n, stop - start)
        empty = (np.full(shape, -np.inf, dtype), np.zeros(shape, dtype), np.zeros(shape + (v.shape[-1],), dtype))
        m, denom, acc = online_softmax_update(*empty, scores, v[..., start:stop, :])
        outs.append(acc / denom[..., None])
        lses.append(m + np.log(denom))
    return np.stack(outs), np.stack(lses)


def flash_decoding(q, k, v, num_splits):
    """Exact attention of a decode step computed as Flash-Decoding does: split, then merge.

    :func:`flash_decoding_partials` attends each of ``num_splits`` chunks of the keys; the
    partial outputs ``o_i`` with their log-sum-exps ``L_i`` are the states ``(L_i, 1, o_i)``,
    merged with :func:`merge_softmax_states`. The result is
    ``sum_i exp(L_i - L) o_i`` with ``L = log sum_i exp(L_i)``: the same numbers as
    :func:`mha_kit.scaled_dot_product_attention` without a mask.

    Parameters
    ----------
    q : ndarray, shape (..., n, d_h)
    k : ndarray, shape (..., s, d_h)
    v : ndarray, shape (..., s, d_v)
    num_splits : int
        Between 1 and ``s``.

    Returns
    -------
    out : ndarray, shape (..., n, d_v)

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    outs, lses = flash_decoding_partials(q, k, v, num_splits)
    state = (lses[0], np.ones_like(lses[0]), outs[0])  # (L_0, 1, o_0)
    for out, lse in zip(outs[1:], lses[1:]):
        state = merge_softmax_states(state, (lse, np.ones_like(lse), out))
    _, denom, acc = state
    return acc / denom[..., None]
