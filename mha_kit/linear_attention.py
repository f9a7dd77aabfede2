"""Linear attention: a fixed-size recurrent state in place of a cache that grows with the context.

Replace the softmax similarity ``exp(q . k / sqrt(d_h))`` by a product of features
``phi(q) . phi(k)`` (Katharopoulos et al. 2020, sec. 3.2, eq. 4-6). The sums over keys then
factor out of the query:

    out_i = phi(q_i) @ (sum_j phi(k_j) v_j^T) / (phi(q_i) @ sum_j phi(k_j))

so a causal model carries only ``S = sum_j phi(k_j) v_j^T`` (``d_phi x d_v``) and
``z = sum_j phi(k_j)`` (``d_phi``) from token to token (sec. 3.4, the recurrent form), however
long the context. :func:`linear_attention` computes it both ways: ``"parallel"`` forms the
``n x s`` matrix of similarities like ordinary attention, ``"recurrent"`` walks the tokens with
the state; they agree to rounding.

Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
"""
from __future__ import annotations

import numpy as np

from .attention import _check_qkv, causal_mask
from .config import check_positive_int

#: The forms :func:`linear_attention` computes.
LINEAR_FORMS = ("parallel", "recurrent")
#: The orders of products :func:`linear_attention_flops` counts.
LINEAR_ORDERS = ("quadratic", "linear", "chunkwise")


def elu_feature_map(x):
    """``elu(x) + 1``: the feature map of Katharopoulos et al. (2020, sec. 3.2.1), always positive.

    ``x + 1`` for ``x > 0`` and ``exp(x)`` otherwise.
    """
    x = np.asarray(x)
    x = x.astype(np.result_type(x.dtype, np.float32), copy=False)  # ints -> float64, float32 stays
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention_state(k, v, feature_map=elu_feature_map):
    """The recurrent state after reading every key: ``S = sum_j phi(k_j) v_j^T`` and ``z = sum_j phi(k_j)``.

    Parameters
    ----------
    k : ndarray, shape (..., s, d_h)
    v : ndarray, shape (..., s, d_v)
    feature_map : callable
        ``phi``, applied to the last axis; :func:`elu_feature_map` by default.

    Returns
    -------
    S : ndarray, shape (..., d_phi, d_v)
    z : ndarray, shape (..., d_phi)
        Their sizes do not depend on ``s``.
    """
    phi_k = feature_map(np.asarray(k))  # (..., s, d_phi)
    return np.swapaxes(phi_k, -1, -2) @ np.asarray(v), phi_k.sum(axis=-2)  # (..., d_phi, s) @ (..., s, d_v)


def _divide(numerator, denominator):
    """``numerator / denominator[..., None]``, refusing a normaliser that is not positive."""
    if not (denominator > 0).all():
        raise ValueError(f"linear attention needs a positive normaliser phi(q) . sum phi(k) for every query; "
                         f"the feature map gave a smallest value of {denominator.min()!r} (use a positive map "
                         "such as elu(x) + 1)")
    return numerator / denominator[..., None]


def _parallel(phi_q, phi_k, v, causal):
    scores = phi_q @ np.swapaxes(phi_k, -1, -2)  # (..., n, d_phi) @ (..., d_phi, s) -> (..., n, s)
    if causal:
        scores = np.where(causal_mask(phi_q.shape[-2], phi_k.shape[-2]), scores, 0.0)
    return _divide(scores @ v, scores.sum(axis=-1))  # (..., n, s) @ (..., s, d_v) -> (..., n, d_v)


def _recurrent(phi_q, phi_k, v, causal):
    n, s = phi_q.shape[-2], phi_k.shape[-2]
    if not causal:  # every query reads the state after the last key
        state, z = np.swapaxes(phi_k, -1, -2) @ v, phi_k.sum(axis=-2)
        return _divide(phi_q @ state, (phi_q * z[..., None, :]).sum(axis=-1))
    state = np.zeros(np.broadcast_shapes(phi_k.shape[:-2], v.shape[:-2]) + (phi_k.shape[-1], v.shape[-1]))
    z = np.zeros(state.shape[:-1])  # (..., d_phi)
    outs = []
    for j in range(s):  # token j writes its key and value into the state; queries at j read it
        state = state + phi_k[..., j, :, None] * v[..., j, None, :]  # (..., d_phi, 1) * (..., 1, d_v)
        z = z + phi_k[..., j, :]
        if j >= s - n:  # query i = j - (s - n) sits at position j
            q_j = phi_q[..., j - (s - n), :]  # (..., d_phi)
            outs.append(_divide((q_j[..., None, :] @ state)[..., 0, :], (q_j * z).sum(axis=-1)))
    return np.stack(outs, axis=-2)


def linear_attention(q, k, v, causal=True, form="parallel", feature_map=elu_feature_map):
    """Linear attention ``phi(q) phi(k)^T v``, normalised per query, in its parallel or recurrent form.

    Parameters
    ----------
    q : ndarray, shape (..., n, d_h)
    k : ndarray, shape (..., s, d_h)
    v : ndarray, shape (..., s, d_v)
    causal : bool
        Query ``i`` sits at position ``s - n + i`` and reads keys up to it (the convention of
        :func:`mha_kit.causal_mask`); otherwise every query reads every key.
    form : {"parallel", "recurrent"}
        ``"parallel"``: the ``n x s`` similarities ``phi(q) phi(k)^T``, masked and normalised
        (eq. 4-6). ``"recurrent"``: one token at a time through the state ``S``, ``z`` (sec. 3.4).
    feature_map : callable
        ``phi``; it must make every normaliser positive. :func:`elu_feature_map` by default.

    Returns
    -------
    out : ndarray, shape (..., n, d_v)

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    q, k, v = (np.asarray(a) for a in (q, k, v))
    _check_qkv(q, k, v)
    if form not in LINEAR_FORMS:
        raise ValueError(f"form must be one of {LINEAR_FORMS}, got {form!r}")
    if causal and q.shape[-2] > k.shape[-2]:
        raise ValueError(f"causal linear attention needs n <= s: {q.shape[-2]} queries, {k.shape[-2]} keys")
    phi_q, phi_k = feature_map(q), feature_map(k)
    return (_parallel if form == "parallel" else _recurrent)(phi_q, phi_k, v, causal)


def linear_attention_flops(n, d_phi, d_v, order, chunk=None) -> int:
    """Floating-point operations of one head's numerator ``phi(Q) phi(K)^T V`` over ``n`` tokens.

    A multiply-add counts 2; dense products are counted whole (a kernel that skips masked blocks
    halves the ``n^2`` terms). Katharopoulos et al. (2020, sec. 3.2, eq. 5-6):

    * ``"quadratic"``: ``(phi(Q) phi(K)^T) V``, the ``n x n`` similarities first:
      ``2 n^2 d_phi + 2 n^2 d_v``, i.e. ``O(n^2 d)``.
    * ``"linear"``: ``phi(Q) (phi(K)^T V)``, the ``d_phi x d_v`` state first, then one read per
      query: ``2 n d_phi d_v + 2 n d_phi d_v``, i.e. ``O(n d^2)``. The causal prefix sum does the
      same work: each token adds ``phi(k) v^T`` to the state and reads it with ``phi(q)``.
    * ``"chunkwise"``: chunks of ``chunk`` tokens, quadratic inside a chunk and through the state
      across chunks (Yang et al. 2024, sec. 2.2): ``2 n chunk (d_phi + d_v) + 4 n d_phi d_v``.

    Returns
    -------
    int
    """
    n, d_phi, d_v = (check_positive_int(name, x) for name, x in (("n", n), ("d_phi", d_phi), ("d_v", d_v)))
    if order not in LINEAR_ORDERS:
        raise ValueError(f"order must be one of {LINEAR_ORDERS}, got {order!r}")
    if order == "quadratic":
        return 2 * n * n * (d_phi + d_v)
    if order == "linear":
        return 4 * n * d_phi * d_v
    chunk = check_positive_int("chunk", chunk)
    if n % chunk:
        raise ValueError(f"chunk ({chunk}) must divide n ({n})")
    return 2 * n * chunk * (d_phi + d_v) + 4 * n * d_phi * d_v


def linear_attention_chunked(q, k, v, chunk, feature_map=elu_feature_map):
    """Causal linear attention computed chunk by chunk, as linear-attention kernels train it.

    Inside a chunk: the masked parallel form (small matrix products). Across chunks: the state
    ``S``, ``z`` of every earlier chunk, added once per chunk (Yang et al. 2024, sec. 2.2).
    ``chunk = 1`` is the recurrent form, ``chunk = n`` the parallel form.

    Parameters
    ----------
    q, k : ndarray, shape (..., n, d_h)
    v : ndarray, shape (..., n, d_v)
    chunk : int
        Tokens per chunk; the last chunk may be shorter.

    Returns
    -------
    out : ndarray, shape (..., n, d_v), equal to ``linear_attention(q, k, v, causal=True)``.
    """
    q, k, v = (np.asarray(a) for a in (q, k, v))
    _check_qkv(q, k, v)
    n, chunk = q.shape[-2], check_positive_int("chunk", chunk)
    if k.shape[-2] != n:
        raise ValueError(f"chunked linear attention is self-attention: {n} queries need {n} keys, got {k.shape[-2]}")
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = np.zeros(np.broadcast_shapes(phi_k.shape[:-2], v.shape[:-2]) + (phi_k.shape[-1], v.shape[-1]))
    z = np.zeros(state.shape[:-1])  # (..., d_phi)
    outs = []
    for start in range(0, n, chunk):
        pq, pk, vc = (a[..., start:start + chunk, :] for a in (phi_q, phi_k, v))  # (..., c, d)
        scores = np.where(causal_mask(pq.shape[-2]), pq @ np.swapaxes(pk, -1, -2), 0.0)  # (..., c, c)
        numerator = pq @ state + scores @ vc  # earlier chunks through the state, this chunk directly
        outs.append(_divide(numerator, (pq * z[..., None, :]).sum(axis=-1) + scores.sum(axis=-1)))
        state = state + np.swapaxes(pk, -1, -2) @ vc  # (..., d_phi, c) @ (..., c, d_v)
        z = z + pk.sum(axis=-2)
    return np.concatenate(outs, axis=-2)


def gated_delta_rule(q, k, v, alpha, beta, state=None):
    """The gated delta rule, token by token: ``S_t = S_{t-1} Diag(a_t) (I - b_t k_t k_t^T) + b_t v_t k_t^T``.

    Gated DeltaNet (Yang et al. 2024, sec. 3.1) decays the state by a scalar ``a_t`` in (0, 1]
    and then overwrites what it holds for key ``k_t``: the delta rule reads the current value
    ``S k_t``, moves it towards ``v_t`` by the step ``b_t`` in [0, 1], and writes the correction.
    Written without the ``d_k x d_k`` matrix, ``A = S_{t-1} Diag(a_t)``, ``S_t = A + b_t (v_t - A k_t) k_t^T``.
    ``alpha`` of shape ``(n,)`` is Gated DeltaNet's gate; of shape ``(n, d_k)``, one decay per key
    channel, it is Kimi Delta Attention's (Kimi Linear, sec. 3, with the state transposed). The output is
    ``o_t = S_t q_t``.

    Parameters
    ----------
    q, k : array, shape (n, d_k)
        Queries and keys (the models L2-normalise them; nothing is normalised here).
    v : array, shape (n, d_v)
    alpha : array, shape (n,) or (n, d_k)
        Decay gates in (0, 1].
    beta : array, shape (n,)
        Write strengths in [0, 1].
    state : array, shape (d_v, d_k), optional
        The state before the first token; zeros by default.

    Returns
    -------
    out : array, shape (n, d_v)
    state : array, shape (d_v, d_k)
        The state after the last token.
    """
    q, k, v = (np.asarray(x, dtype=float) for x in (q, k, v))
    alpha, beta = np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float)
    if q.ndim != 2 or q.shape != k.shape or v.ndim != 2 or v.shape[0] != q.shape[0]:
        raise ValueError(f"q and k must be (n, d_k) and v (n, d_v) with the same n, got {q.shape}, {k.shape}, {v.shape}")
    n, d_k = q.shape
    if alpha.shape not in ((n,), (n, d_k)) or beta.shape != (n,):
        raise ValueError(f"alpha must be (n,) or (n, d_k) and beta (n,) with n = {n}, d_k = {d_k}, "
                         f"got {alpha.shape} and {beta.shape}")
    if not ((alpha > 0).all() and (alpha <= 1).all() and (beta >= 0).all() and (beta <= 1).all()):
        raise ValueError("the gates must satisfy 0 < alpha <= 1 and 0 <= beta <= 1")
    S = np.zeros((v.shape[1], d_k)) if state is None else np.array(state, dtype=float)
    gate = alpha.reshape(n, -1)  # (n, 1) or (n, d_k): broadcast over the key columns of S
    out = np.empty_like(v)
    for t in range(n):
        decayed = S * gate[t]  # (d_v, d_k): S_{t-1} Diag(alpha_t)
        S = decayed + beta[t] * np.outer(v[t] - decayed @ k[t], k[t])  # delta-rule write
        out[t] = S @ q[t]
    return out, S


def row_normaliser_jacobian(scores, kind):
    """``d p_j / d s_k`` for one row of attention weights ``p`` made from scores ``s``.

    ``kind="softmax"``: ``p = exp(s) / sum exp(s)``, so ``dp_j/ds_k = p_j (delta_jk - p_k)``, never above 1/4
    in size. ``kind="linear"``: linear attention's row ``p = s / sum s`` with ``s_j = phi(q) . phi(k_j) > 0``,
    so ``dp_j/ds_k = (delta_jk - p_j) / sum s``, which grows without bound as the row sum (the normaliser
    ``phi(q) . z``) shrinks (Qin et al. 2022, "The Devil in Linear Transformer", sec. 3).

    Parameters
    ----------
    scores : array, shape (n,)
        One query's scores; positive for ``"linear"``.
    kind : {"softmax", "linear"}

    Returns
    -------
    jac : array, shape (n, n)
        ``jac[j, k] = d p_j / d s_k``.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or kind not in ("softmax", "linear"):
        raise ValueError(f"scores must be one row (n,) and kind 'softmax' or 'linear', got {s.shape} and {kind!r}")
    if kind == "softmax":
        p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        return np.diag(p) - np.outer(p, p)  # p_j delta_jk - p_j p_k
    if not (s > 0).all():
        raise ValueError(f"linear attention's scores phi(q) . phi(k) must be positive, smallest is {s.min()!r}")
    return (np.eye(s.size) - (s / s.sum())[:, None]) / s.sum()  # (delta_jk - p_j) / sum s



def _check_sequence_qkv(q, k, v):
    """``q, k, v`` as float arrays, after checking ``q`` and ``k`` are ``(n, d_k)`` and ``v`` is ``(n, d_v)``."""
    q, k, v = (np.asarray(x, dtype=float) for x in (q, k, v))
    if q.ndim != 2 or q.shape != k.shape or v.ndim != 2 or v.shape[0] != q.shape[0]:
        raise ValueError(f"q and k must be (n, d_k) and v (n, d_v) with the same n, got {q.shape}, {k.shape}, {v.shape}")
    return q, k, v

def decayed_linear_attention(q, k, v, gate, form="recurrent"):
    """Linear attention with a decaying state, no normaliser: ``S_t = Diag(g_t) S_{t-1} + k_t v_t^T``, ``o_t = q_t S_t``.

    The gate picks the model. A scalar ``gate`` is RetNet's fixed per-head decay gamma (Sun et al. 2023,
    sec. 2.1); shape ``(n,)``, one data-dependent decay per token, is Mamba-2's ``exp(dt_t A)``
    (Dao and Gu 2024, sec. 5); shape ``(n, d_k)``, one per token and key channel, is GLA's
    ``alpha_t`` (Yang et al. 2024, sec. 4.1). ``"recurrent"`` walks the tokens with the ``d_k x d_v``
    state; ``"parallel"`` forms the decay-masked ``n x n`` matrix, ``((Q * b)(K / b)^T . mask) V`` with
    ``b_t`` the cumulative product of the gates (RetNet's ``(Q K^T . D) V`` when the gate is fixed).
    The parallel form divides by running products of gates, so it underflows on long sequences with
    small gates; it is for checking short ones (kernels work chunk by chunk, GLA sec. 4.2).

    Parameters
    ----------
    q, k : array, shape (n, d_k)
    v : array, shape (n, d_v)
    gate : float or array, shape (n,) or (n, d_k)
        Decays in (0, 1].
    form : {"recurrent", "parallel"}

    Returns
    -------
    out : array, shape (n, d_v)
    """
    q, k, v = _check_sequence_qkv(q, k, v)
    n, d_k = q.shape
    if np.shape(gate) not in ((), (n,), (n, d_k)):
        raise ValueError(f"gate must be a scalar, (n,) or (n, d_k) with n = {n}, d_k = {d_k}, got {np.shape(gate)}")
    g = np.broadcast_to(np.asarray(gate, dtype=float).reshape((n, -1) if np.ndim(gate) else (1, 1)), (n, d_k))
    if not ((g > 0).all() and (g <= 1).all()) or form not in LINEAR_FORMS:
        raise ValueError(f"gates must lie in (0, 1] and form be one of {LINEAR_FORMS}, got form {form!r}")
    if form == "parallel":
        b = np.cumprod(g, axis=0)  # (n, d_k): product of the gates up to t
        return np.where(causal_mask(n), (q * b) @ (k / b).T, 0.0) @ v  # (n, n) @ (n, d_v)
    S, out = np.zeros((d_k, v.shape[1])), np.empty((n, v.shape[1]))
    for t in range(n):
        S = g[t][:, None] * S + np.outer(k[t], v[t])  # decay each key row, then write
        out[t] = q[t] @ S
    return out


def lightning_attention(q, k, v, block, decay=1.0):
    """Lightning Attention-2's forward pass: left product inside a block, right product across blocks.

    Causal linear attention with a fixed decay ``lambda`` (``o_t = sum_{s<=t} lambda^(t-s) (q_t . k_s) v_s``,
    no normaliser), computed block by block (Qin et al. 2024, sec. 3, Algorithm 1): inside block ``i``,
    ``O_intra = ((Q_i K_i^T) . M) V_i`` with ``M_ts = lambda^(t-s)`` for ``t >= s``; across blocks,
    ``O_inter = Lambda Q_i KV`` with ``Lambda = diag(lambda, ..., lambda^B)``, then
    ``KV <- lambda^B KV + (lambda^B Lambda^-1 K_i)^T V_i``. No cumulative sum over the whole sequence.

    Parameters
    ----------
    q, k : array, shape (n, d_k)
    v : array, shape (n, d_v)
    block : int
        Tokens per block, ``B``; must divide ``n``.
    decay : float
        ``lambda`` in (0, 1].

    Returns
    -------
    out : array, shape (n, d_v)
    """
    q, k, v = _check_sequence_qkv(q, k, v)
    n, block = q.shape[0], check_positive_int("block", block)
    if n % block or not 0 < decay <= 1:
        raise ValueError(f"block ({block}) must divide n ({n}) and decay ({decay}) lie in (0, 1]")
    pos = np.arange(1, block + 1)  # 1 .. B
    mask = np.where(causal_mask(block), float(decay) ** (pos[:, None] - pos[None, :]), 0.0)  # (B, B)
    lam, kv, outs = float(decay) ** pos, np.zeros((q.shape[1], v.shape[1])), []
    for i in range(0, n, block):
        qi, ki, vi = q[i:i + block], k[i:i + block], v[i:i + block]
        outs.append(((qi @ ki.T) * mask) @ vi + (lam[:, None] * qi) @ kv)  # intra (left) + inter (right)
        kv = lam[-1] * kv + ((lam[-1] / lam)[:, None] * ki).T @ vi  # (d_k, B) @ (B, d_v)
    return np.concatenate(outs)
