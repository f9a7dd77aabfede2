"""Softmax, masks, scaled dot-product attention and the MHA / GQA / MQA forward pass.

Shapes use the project's letters: ``n`` queries, ``s`` keys, ``d`` model width, ``h`` query
heads, ``h_kv`` key-value heads, ``g = h // h_kv``, ``d_h`` head size.
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def softmax(x, axis=-1):
    """Numerically stable softmax along ``axis``.

    The row maximum is subtracted before ``exp`` so large scores cannot overflow, and ``-inf``
    entries (masked scores) become exact zeros.

    A row whose every entry is ``-inf`` has no distribution to return: instead of the NaNs that
    ``exp(-inf - -inf)`` would give, this raises ``ValueError``. (Causal masks never produce such
    rows; padding masks can, and the caller must decide what a fully masked query means.)
    NaN and ``+inf`` inputs raise too, and so does an axis with no scores at all.

    Parameters
    ----------
    x : array_like, any shape
    axis : int

    Returns
    -------
    ndarray, same shape as ``x``, non-negative, summing to one along ``axis``.

    Book: chapter "From first principles", step 2.
    """
    x = np.asarray(x)
    x = x.astype(np.result_type(x.dtype, np.float32), copy=False)  # ints -> float64, float32 stays
    if x.ndim == 0 or x.shape[axis] == 0:
        raise ValueError(f"softmax needs at least one score along axis {axis}, got shape {x.shape}")
    row_max = np.max(x, axis=axis, keepdims=True)
    if np.isnan(row_max).any() or np.isposinf(row_max).any():
        raise ValueError("softmax input contains NaN or +inf")
    if np.isneginf(row_max).any():
        raise ValueError(
            f"softmax: a row along axis {axis} is entirely -inf (every key masked); "
            "it has no distribution - check the mask"
        )
    e = np.exp(x - row_max)
    return e / e.sum(axis=axis, keepdims=True)


def masked_softmax(scores, mask, empty_rows="raise"):
    """Softmax along the last axis over the entries where ``mask`` is ``True``.

    Masked entries get weight exactly zero. A row with no allowed entry (a query that may see
    no key: left padding under a causal mask, say) has no distribution; ``empty_rows`` says
    what to do with it:

    * ``"raise"``: ``ValueError`` from :func:`softmax`, as everywhere else in mha_kit;
    * ``"zero"``: all-zero weights, so the query's output is zero: what PyTorch's
      ``scaled_dot_product_attention`` returns since version 2.5 (its ``_safe_softmax``).

    Parameters
    ----------
    scores : ndarray, shape (..., n, s)
    mask : ndarray of bool, broadcastable with ``scores``
    empty_rows : {"raise", "zero"}

    Returns
    -------
    ndarray, the broadcast shape of ``scores`` and ``mask``

    Book: chapter "Self-, cross- and masked attention".
    """
    scores, mask = np.asarray(scores), _check_mask(mask, np.shape(scores))
    shape = np.broadcast_shapes(mask.shape, scores.shape)  # a mask may add leading axes
    scores, mask = np.broadcast_to(scores, shape), np.broadcast_to(mask, shape)
    _check_empty_rows(empty_rows)
    filled = np.where(mask, scores, -np.inf)
    if empty_rows == "raise":
        return softmax(filled)
    empty = ~mask.any(axis=-1, keepdims=True)  # (..., n, 1): rows with nothing to attend to
    return np.where(empty, 0.0, softmax(np.where(empty, 0.0, filled)))  # any finite fill, then zeroed


def _check_empty_rows(empty_rows):
    if empty_rows not in ("raise", "zero"):
        raise ValueError(f"empty_rows must be 'raise' or 'zero', got {empty_rows!r}")


def causal_mask(n_queries, n_keys=None):
    """Boolean mask, ``True`` where query ``i`` may attend to key ``j``.

    With ``n_keys > n_queries`` the queries are the *last* ``n_queries`` positions (decoding
    with a cache of earlier tokens), so row ``i`` may see keys ``0 .. n_keys - n_queries + i``::

        causal_mask(2, 4) ->  [[T, T, T, F],
                               [T, T, T, T]]

    Returns
    -------
    ndarray of bool, shape (n_queries, n_keys)

    Book: chapter "Trade-offs", section on masking.
    """
    n = check_positive_int("n_queries", n_queries)
    s = n if n_keys is None else check_positive_int("n_keys", n_keys)
    if s < n:
        raise ValueError(f"n_keys ({s}) must be at least n_queries ({n}): the queries are the last positions")
    # key j is visible to query i when j <= i + (s - n)
    return np.arange(s)[None, :] <= np.arange(n)[:, None] + (s - n)


def sliding_window_mask(n_queries, window, n_keys=None):
    """Causal mask that also hides keys more than ``window - 1`` positions back.

    Same convention as :func:`causal_mask`: ``True`` where query ``i`` may attend to key ``j``,
    and with ``n_keys > n_queries`` the queries are the last ``n_queries`` positions. Each query
    sees itself and the ``window - 1`` keys before it, so a rolling cache of ``window`` entries
    holds everything it needs (Mistral 7B's convention, arXiv:2310.06825 sec. 2)::

        sliding_window_mask(4, 2) ->  [[T, F, F, F],
                                       [T, T, F, F],
                                       [F, T, T, F],
                                       [F, F, T, T]]

    ``window >= n_keys`` gives :func:`causal_mask` exactly.

    Returns
    -------
    ndarray of bool, shape (n_queries, n_keys)

    Book: chapter "Self-, cross- and masked attention".
    """
    n = check_positive_int("n_queries", n_queries)
    w = check_positive_int("window", window)
    mask = causal_mask(n, n_keys)  # (n, s), checks n_keys
    s = mask.shape[1]
    # query i sits at position p = i + (s - n); it keeps keys j > p - w, i.e. p - w + 1 .. p
    return mask & (np.arange(s)[None, :] > np.arange(n)[:, None] + (s - n) - w)


def padding_mask(lengths, n_keys, side="right"):
    """Key mask for a batch of sequences padded to ``n_keys`` tokens: ``True`` on real tokens.

    Sequence ``b`` holds ``lengths[b]`` real tokens, after its padding (``side="left"``, as
    batched generation pads) or before it (``side="right"``). Combine with a causal mask by
    ``&``: ``padding_mask(lengths, n) & causal_mask(n)`` has shape ``(B, n, n)``.

    Parameters
    ----------
    lengths : sequence of int, shape (B,)
        Real tokens per sequence, each in ``1 .. n_keys``.
    n_keys : int
    side : {"right", "left"}

    Returns
    -------
    ndarray of bool, shape (B, 1, n_keys): broadcasts over the queries.

    Book: chapter "Self-, cross- and masked attention".
    """
    s = check_positive_int("n_keys", n_keys)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"lengths must be a non-empty 1-D sequence of integers, got {lengths.tolist()!r}")
    if lengths.min() < 1 or lengths.max() > s:
        raise ValueError(f"every length must be in 1 .. n_keys ({s}), got {lengths.tolist()}")
    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    j = np.arange(s)[None, :]  # (1, s)
    real = j < lengths[:, None] if side == "right" else j >= s - lengths[:, None]  # (B, s)
    return real[:, None, :]  # (B, 1, s)


def scaled_dot_product_attention(q, k, v, mask=None, empty_rows="raise"):
    """``softmax(q k^T / sqrt(d_h)) v``, with masked scores set to ``-inf`` *before* softmax.

    Parameters
    ----------
    q : ndarray, shape (..., n, d_h)
    k : ndarray, shape (..., s, d_h)
    v : ndarray, shape (..., s, d_v)
    mask : ndarray of bool, broadcastable to (..., n, s), optional
        ``True`` where attention is allowed.
    empty_rows : {"raise", "zero"}
        A query whose every key is masked: raise, or give it zero weights and a zero output
        (see :func:`masked_softmax`).

    Returns
    -------
    out : ndarray, shape (..., n, d_v)
    weights : ndarray, shape (..., n, s), rows summing to one (or zero for empty rows)

    Book: chapter "From first principles", step 2.
    """
    q, k, v = (np.asarray(a) for a in (q, k, v))
    _check_qkv(q, k, v)
    _check_empty_rows(empty_rows)  # checked even without a mask, so a typo never passes silently
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., n, d_h) @ (..., d_h, s) -> (..., n, s)
    weights = softmax(scores) if mask is None else masked_softmax(scores, mask, empty_rows)
    return weights @ v, weights  # (..., n, s) @ (..., s, d_v) -> (..., n, d_v)


def _check_qkv(q, k, v):
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"q, k, v need at least 2 dimensions (tokens, features), got {q.shape}, {k.shape}, {v.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the head size: q {q.shape}, k {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must hold the same number of keys: k {k.shape}, v {v.shape}")


def _check_mask(mask, scores_shape, strict=False):
    """A boolean mask that broadcasts with ``scores_shape``.

    With ``strict``, it must also not add or lengthen axes (a layer's mask has no head axis).
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    try:
        shape = np.broadcast_shapes(mask.shape, scores_shape)
    except ValueError:
        shape = None
    if shape is None or (strict and shape != tuple(scores_shape)):
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to scores {tuple(scores_shape)}")
    return mask


def split_heads(x, num_heads):
    """``(..., n, h * d_h) -> (..., h, n, d_h)``: cut the width into ``num_heads`` slices.

    Book: chapter "From first principles", step 3.
    """
    x = np.asarray(x)
    h = check_positive_int("num_heads", num_heads)
    if x.shape[-1] % h:
        raise ValueError(f"width ({x.shape[-1]}) must be divisible by num_heads ({h})")
    x = x.reshape(*x.shape[:-1], h, x.shape[-1] // h)  # (..., n, h, d_h)
    return np.swapaxes(x, -2, -3)  # (..., h, n, d_h)


def merge_heads(x):
    """``(..., h, n, d_h) -> (..., n, h * d_h)``: glue the heads side by side (step 5)."""
    x = np.swapaxes(np.asarray(x), -2, -3)  # (..., n, h, d_h)
    return x.reshape(*x.shape[:-2], -1)


def grouped_attention(q, k, v, mask=None):
    """Attention of ``h`` query heads over ``h_kv`` shared key-value heads, without copying K, V.

    Query head ``i`` reads key-value head ``i // g`` with ``g = h // h_kv`` (the layout of
    Hugging Face's ``repeat_kv`` and PyTorch's ``enable_gqa``). For ``h=4, h_kv=2`` the heads
    read ``[K0, K0, K1, K1]``. Instead of repeating K and V ``g`` times, the ``g`` queries of a
    group are stacked into one ``(g * n, d_h)`` block and multiplied by their shared keys once.

    Parameters
    ----------
    q : ndarray, shape (..., h, n, d_h)
    k : ndarray, shape (..., h_kv, s, d_h)
    v : ndarray, shape (..., h_kv, s, d_v)
    mask : ndarray of bool, broadcastable to (..., n, s), optional
        One mask for all heads; its leading axes are the batch axes of ``q`` (no head axis).

    Returns
    -------
    out : ndarray, shape (..., h, n, d_v)
    weights : ndarray, shape (..., h, n, s)
    """
    q, k, v = (np.asarray(a) for a in (q, k, v))
    if q.ndim < 3 or k.ndim < 3 or v.ndim < 3:
        raise ValueError(f"expected q (..., h, n, d_h) and k, v (..., h_kv, s, d_h), got {q.shape}, {k.shape}, {v.shape}")
    h, n, h_kv = q.shape[-3], q.shape[-2], k.shape[-3]
    if v.shape[-3] != h_kv:
        raise ValueError(f"k and v must have the same number of heads, got {h_kv} and {v.shape[-3]}")
    if h % h_kv:
        raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({h_kv})")
    g = h // h_kv
    q_grouped = q.reshape(*q.shape[:-3], h_kv, g * n, q.shape[-1])  # (..., h_kv, g*n, d_h)
    if mask is not None:
        target = (*q.shape[:-3], n, k.shape[-2])  # the batch axes, then (n, s)
        mask = np.broadcast_to(_check_mask(mask, target, strict=True), target)  # e.g. (1, s) -> (..., n, s)
        mask = np.tile(mask, (g, 1))[..., None, :, :]  # (..., 1, g*n, s): row r is query r % n
    out, weights = scaled_dot_product_attention(q_grouped, k, v, mask)  # (..., h_kv, g*n, ·)
    return (out.reshape(*q.shape[:-1], v.shape[-1]),  # (..., h, n, d_v)
            weights.reshape(*q.shape[:-1], k.shape[-2]))  # (..., h, n, s)


def _head_dims(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, d_context=None):
    """Validate the weights of an attention layer; return ``(h, h_kv, d_h)``.

    ``d_context`` is the width of the tokens that keys and values come from, when they are not
    ``x`` (cross-attention).
    """
    d = x.shape[-1]
    h = check_positive_int("num_heads", num_heads)
    h_kv = h if num_kv_heads is None else check_positive_int("num_kv_heads", num_kv_heads)
    if h % h_kv:
        raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({h_kv})")
    if w_q.ndim != 2 or w_q.shape[0] != d or w_q.shape[1] % h:
        raise ValueError(f"expected w_q of shape ({d}, num_heads * head_dim) with num_heads={h}, got {w_q.shape}")
    d_h = w_q.shape[1] // h
    rows, label = (d, "d") if d_context is None else (d_context, "d_context")
    for name, w in (("w_k", w_k), ("w_v", w_v)):
        if w.shape != (rows, h_kv * d_h):
            raise ValueError(f"expected {name} of shape ({rows}, {h_kv * d_h}) = ({label}, num_kv_heads * head_dim), got {w.shape}")
    if w_o.ndim != 2 or w_o.shape[0] != h * d_h:
        raise ValueError(f"expected w_o of shape ({h * d_h}, d_out) = (num_heads * head_dim, d_out), got {w_o.shape}")
    return h, h_kv, d_h


def _as_tokens(x, name="x", shape="(n, d)"):
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"expected {name} of shape {shape} (optionally with leading batch axes), got {x.shape}")
    return x


def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads=None, causal=False, context=None,
                         mask=None):
    """Multi-head attention; grouped-query with ``num_kv_heads < num_heads``, multi-query with 1.

    Self-attention by default: queries, keys and values all come from ``x``. With ``context``
    it is cross-attention: queries from ``x``, keys and values from ``context`` (an encoder's
    output, say), so each of the ``n`` queries weighs the ``s`` context tokens.

    Parameters
    ----------
    x : ndarray, shape (n, d) or (..., n, d)
    w_q : ndarray, shape (d, h * d_h)
    w_k, w_v : ndarray, shape (d, h_kv * d_h), or (d_context, h_kv * d_h) with a context
    w_o : ndarray, shape (h * d_h, d)
    num_heads : int
    num_kv_heads : int, optional
        ``None`` means ``num_heads`` (MHA). Query head ``i`` reads KV head ``i // (h // h_kv)``.
    causal : bool
        Let token ``i`` see only tokens ``0..i`` (self-attention only).
    context : ndarray, shape (s, d_context) or (..., s, d_context), optional
        Tokens the keys and values come from; its leading axes must equal those of ``x``.
    mask : ndarray of bool, broadcastable to (..., n, s), optional
        ``True`` where query ``i`` may attend to key ``j``, the same for every head; combined
        with the causal mask by ``&``. See :func:`padding_mask`, :func:`sliding_window_mask`.

    Returns
    -------
    out : ndarray, shape (..., n, d)
    weights : ndarray, shape (..., h, n, s), with ``s = n`` for self-attention

    Book: chapter "From first principles", steps 1-5; cross-attention and masks in
    "Self-, cross- and masked attention".
    """
    x = _as_tokens(x)
    source = x if context is None else _check_context(context, x, causal)
    w_q, w_k, w_v, w_o = (np.asarray(w) for w in (w_q, w_k, w_v, w_o))
    h, h_kv, _ = _head_dims(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads,
                            None if context is None else source.shape[-1])
    q = split_heads(x @ w_q, h)  # (..., n, d) @ (d, h*d_h) -> (..., h, n, d_h)
    k = split_heads(source @ w_k, h_kv)  # (..., h_kv, s, d_h)
    v = split_heads(source @ w_v, h_kv)  # (..., h_kv, s, d_h)
    if mask is not None:
        mask = _check_mask(mask, (*x.shape[:-2], x.shape[-2], source.shape[-2]), strict=True)  # (..., n, s)
    if causal:
        mask = causal_mask(x.shape[-2]) if mask is None else mask & causal_mask(x.shape[-2])
    heads, weights = grouped_attention(q, k, v, mask)  # (..., h, n, d_h), (..., h, n, s)
    return merge_heads(heads) @ w_o, weights  # (..., n, h*d_h) @ (h*d_h, d) -> (..., n, d)


def _check_context(context, x, causal):
    """Validate cross-attention's ``context`` against the queries' tokens ``x``."""
    context = _as_tokens(context, "context", "(s, d_context)")
    if causal:
        raise ValueError("causal=True applies to self-attention only: with a context, queries and keys are "
                         "different sequences (pass mask= to hide context tokens)")
    if context.shape[:-2] != x.shape[:-2]:
        raise ValueError(f"context must have the leading axes of x: x {x.shape}, context {context.shape}")
    return context


def value_output_matrices(w_v, w_o, num_heads, num_kv_heads=None):
    """Per-head products ``W_V[head] @ W_O[head]``, each ``(d, d_out)``.

    Head ``i`` contributes ``weights_i @ x @ W_V[i // g] @ W_O[i]`` to the output, so the value
    slice and the output block can be multiplied once: ``W_O`` adds no new kind of operation.

    Returns
    -------
    ndarray, shape (h, d, d_out)
    """
    w_v, w_o = np.asarray(w_v), np.asarray(w_o)
    h = check_positive_int("num_heads", num_heads)
    h_kv = h if num_kv_heads is None else check_positive_int("num_kv_heads", num_kv_heads)
    if h % h_kv or w_v.shape[1] % h_kv or w_o.shape[0] != h * (w_v.shape[1] // h_kv):
        raise ValueError(f"w_v {w_v.shape} and w_o {w_o.shape} do not fit num_heads={h}, num_kv_heads={h_kv}")
    d_h = w_v.shape[1] // h_kv
    wv_heads = w_v.reshape(w_v.shape[0], h_kv, d_h).transpose(1, 0, 2)  # (h_kv, d, d_h)
    wo_heads = w_o.reshape(h, d_h, w_o.shape[1])  # (h, d_h, d_out)
    return np.repeat(wv_heads, h // h_kv, axis=0) @ wo_heads  # (h, d, d_h) @ (h, d_h, d_out)


def mean_pool_kv_heads(w, num_heads, num_kv_heads):
    """Convert MHA key or value projection to GQA by mean-pooling heads (Ainslie et al. 2023).

    Parameters
    ----------
    w : ndarray, shape (d, h * d_h)
        ``w_k`` or ``w_v`` of a multi-head checkpoint.

    Returns
    -------
    ndarray, shape (d, h_kv * d_h): KV head ``j`` is the mean of heads ``j*g .. j*g + g - 1``.

    Book: chapter "Trade-offs", section on GQA.
    """
    w = np.asarray(w)
    h = check_positive_int("num_heads", num_heads)
    h_kv = check_positive_int("num_kv_heads", num_kv_heads)
    if h % h_kv:
        raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({h_kv})")
    if w.ndim != 2 or w.shape[1] % h:
        raise ValueError(f"expected w of shape (d, num_heads * head_dim) with num_heads={h}, got {w.shape}")
    d_h = w.shape[1] // h
    return w.reshape(w.shape[0], h_kv, h // h_kv, d_h).mean(axis=2).reshape(w.shape[0], h_kv * d_h)
