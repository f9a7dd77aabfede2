"""Attention's backward pass from the stored log-sum-exp, and a forward FLOP split per token.

FlashAttention-2 keeps only the output ``O`` and one log-sum-exp ``L`` per query row after the
forward pass. Its backward pass (Dao 2023, Algorithm 2) first computes ``D = rowsum(dO * O)``,
then loops over key blocks (outer) and query blocks (inner), recomputing each block of
probabilities ``P = exp(S - L)`` and using it at once::

    dV_j += P^T dO_i        dP = dO_i V_j^T        dS = P * (dP - D_i)
    dQ_i += dS K_j          dK_j += dS^T Q_i

(times the softmax scale for dQ and dK). Every key block adds to every ``dQ_i``: that sum is the
one result shared between key blocks, which a GPU kernel gathers with atomic adds or a second pass.
:func:`attention_backward_dense` is the textbook gradient with the full ``P``, the reference
:func:`flash_attention_backward` is checked against.

:func:`forward_flops_per_token` counts a decoder's forward FLOPs per token by component (two FLOPs
per multiply-add), for the FLOP-split tables of the chapter "What attention costs".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def _scores(q, k, causal):
    """Scaled scores ``(n_q, n_k)`` with the causal mask as -inf (query i sees keys 0..i)."""
    s = q @ k.T / np.sqrt(q.shape[-1])  # (n_q, d) @ (d, n_k) -> (n_q, n_k)
    if causal:
        s = np.where(np.tri(q.shape[0], k.shape[0], dtype=bool), s, -np.inf)
    return s


def attention_forward_lse(q, k, v, causal=False):
    """Softmax attention of one head, returning the output and the per-row log-sum-exp.

    Parameters
    ----------
    q : ndarray, shape (n_q, d)
    k, v : ndarray, shape (n_k, d)
    causal : bool
        Query ``i`` attends to keys ``0..i`` (requires ``n_q == n_k``).

    Returns
    -------
    o : ndarray, shape (n_q, d)
    lse : ndarray, shape (n_q,)
        ``L_i = log sum_j exp(S_ij)``, the one number per row FlashAttention-2 stores.
    """
    _check_shapes(q, k, v, causal)
    s = _scores(q, k, causal)
    m = s.max(axis=1, keepdims=True)  # (n_q, 1)
    lse = (m + np.log(np.exp(s - m).sum(axis=1, keepdims=True)))[:, 0]
    return np.exp(s - lse[:, None]) @ v, lse


def attention_backward_dense(q, k, v, d_o, causal=False):
    """Gradients of softmax attention through the full probability matrix (the reference).

    Parameters
    ----------
    q : ndarray, shape (n_q, d)
    k, v : ndarray, shape (n_k, d)
    d_o : ndarray, shape (n_q, d)
        Gradient of the loss with respect to the output.
    causal : bool

    Returns
    -------
    dq : ndarray, shape (n_q, d)
    dk, dv : ndarray, shape (n_k, d)
    """
    _check_shapes(q, k, v, causal)
    s = _scores(q, k, causal)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)  # (n_q, n_k)
    dp = d_o @ v.T  # (n_q, n_k)
    ds = p * (dp - (p * dp).sum(axis=1, keepdims=True))  # softmax Jacobian, row by row
    scale = 1.0 / np.sqrt(q.shape[-1])
    return scale * ds @ k, scale * ds.T @ q, p.T @ d_o


def flash_attention_backward(q, k, v, o, lse, d_o, block_size=16, causal=False):
    """FlashAttention-2's backward pass (Algorithm 2): blocks of P recomputed from L, with D.

    Parameters
    ----------
    q, o, d_o : ndarray, shape (n_q, d)
        Queries, the forward output and its gradient.
    k, v : ndarray, shape (n_k, d)
    lse : ndarray, shape (n_q,)
        The log-sum-exp the forward pass stored (:func:`attention_forward_lse`).
    block_size : int
        Rows of Q and of K/V per block (``B_r = B_c``).
    causal : bool

    Returns
    -------
    dq : ndarray, shape (n_q, d)
    dk, dv : ndarray, shape (n_k, d)
    """
    _check_shapes(q, k, v, causal)
    check_positive_int("block_size", block_size)
    if o.shape != q.shape or d_o.shape != q.shape or lse.shape != q.shape[:1]:
        raise ValueError(f"o and d_o must have q's shape {q.shape} and lse shape {q.shape[:1]}; "
                         f"got {o.shape}, {d_o.shape}, {lse.shape}")
    scale = 1.0 / np.sqrt(q.shape[-1])
    d = (d_o * o).sum(axis=1)  # D = rowsum(dO * O), (n_q,), computed once before the loops
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for j in range(0, k.shape[0], block_size):  # outer loop: one key block, owned by one program
        kj, vj = k[j:j + block_size], v[j:j + block_size]
        for i in range(0, q.shape[0], block_size):  # inner loop: every query block
            s = q[i:i + block_size] @ kj.T * scale  # (B_r, B_c)
            if causal:
                rows, cols = np.arange(i, i + len(s))[:, None], np.arange(j, j + len(kj))[None, :]
                s = np.where(cols <= rows, s, -np.inf)
            p = np.exp(s - lse[i:i + block_size, None])  # P recomputed from L, no row max or sum
            dv[j:j + block_size] += p.T @ d_o[i:i + block_size]
            ds = p * (d_o[i:i + block_size] @ vj.T - d[i:i + block_size, None])  # P * (dP - D)
            dq[i:i + block_size] += scale * ds @ kj  # shared by all key blocks: atomics on a GPU
            dk[j:j + block_size] += scale * ds.T @ q[i:i + block_size]
    return dq, dk, dv


def _check_shapes(q, k, v, causal):
    if q.ndim != 2 or k.shape != v.shape or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"q must be (n_q, d) and k, v (n_k, d) with the same d; got {q.shape}, {k.shape}, {v.shape}")
    if causal and q.shape[0] != k.shape[0]:
        raise ValueError(f"a causal mask needs n_q == n_k; got {q.shape[0]} and {k.shape[0]}")


def forward_flops_per_token(d_model, num_layers, d_ff, n_ctx, *, vocab=0, d_attn=None, d_kv=None,
                            ffn_matrices=2, causal_mean=False):
    """Forward FLOPs of one token of a dense decoder, by component (2 FLOPs per multiply-add).

    Parameters
    ----------
    d_model, num_layers, d_ff : int
        Width, depth and feed-forward width.
    n_ctx : int
        Keys the token attends to; with ``causal_mean`` the prefill length, and the count is
        the average over its positions, ``(n_ctx + 1) / 2`` keys.
    vocab : int
        Vocabulary of the output layer (0 leaves it out).
    d_attn, d_kv : int, optional
        Query width ``h * d_h`` (default ``d_model``) and key/value width ``h_kv * d_h``
        (default ``d_attn``).
    ffn_matrices : int
        2 for a GELU MLP (GPT-2), 3 for a gated one (SwiGLU).

    Returns
    -------
    dict
        ``projections`` (W_Q, W_K, W_V, W_O), ``attention`` (QK^T and PV), ``ffn``, ``lm_head``,
        summed over the layers (``lm_head`` once).
    """
    for name, value in (("d_model", d_model), ("num_layers", num_layers), ("d_ff", d_ff), ("n_ctx", n_ctx)):
        check_positive_int(name, value)
    if ffn_matrices not in (2, 3) or vocab < 0:
        raise ValueError(f"ffn_matrices must be 2 or 3 and vocab >= 0; got {ffn_matrices} and {vocab}")
    d_attn = d_model if d_attn is None else d_attn
    d_kv = d_attn if d_kv is None else d_kv
    keys = (n_ctx + 1) / 2 if causal_mean else n_ctx
    return {"projections": num_layers * 2 * (2 * d_model * d_attn + 2 * d_model * d_kv),
            "attention": num_layers * 4 * keys * d_attn,
            "ffn": num_layers * 2 * ffn_matrices * d_model * d_ff,
            "lm_head": 2 * d_model * vocab}
