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

Book: chapter "What attention costs".
"""
from __future__ import annotations

import numpy as np

from .attention import _check_mask, _check_qkv, scaled_dot_product_attention
from .config import check_positive_int


def online_softmax_update(m, l, acc, scores, v_block):
    """Fold one block of scores and its values into the running ``(m, l, acc)``.

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
    m_new = np.maximum(m, scores.max(axis=-1))  # (..., n)
    # A row that has seen no allowed key keeps m = -inf; shifting by 0 instead keeps exp(-inf) = 0
    # and avoids -inf - (-inf) = NaN.
    shift = np.where(np.isneginf(m_new), 0.0, m_new)
    p = np.exp(scores - shift[..., None])  # (..., n, b), zero where masked
    alpha = np.exp(m - shift)  # rescales what was summed under the old maximum (0 at the start)
    l_new = alpha * l + p.sum(axis=-1)
    acc_new = alpha[..., None] * acc + p @ v_block  # (..., n, b) @ (..., b, d_v) -> (..., n, d_v)
    return m_new, l_new, acc_new


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


def _block_scores(q, k_block, mask_block):
    """Scaled scores of one key block, ``-inf`` where the mask forbids."""
    scores = q @ np.swapaxes(k_block, -1, -2) / np.sqrt(q.shape[-1])  # (..., n, d_h) @ (..., d_h, b) -> (..., n, b)
    if mask_block is not None:
        scores = np.where(mask_block, scores, -np.inf)
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise ValueError("flash_attention: scores contain NaN or +inf (as softmax, it refuses them)")
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
