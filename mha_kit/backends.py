"""What attention backends do beyond plain attention, in NumPy: the pieces the book counts.

* **FlexAttention**: a ``score_mod`` edits each score before the softmax and a ``mask_mod`` says
  which (query, key) pairs exist; :func:`block_mask_from_mask_mod` turns the mask into per-tile
  kinds (empty, partial, full) so that a kernel skips empty tiles and masks only partial ones, and
  :func:`flex_attention` runs the tiled loop with the online softmax (Dong et al. 2024, sec. 3).
* **CUDA graphs**: :func:`vllm_capture_sizes` and :func:`padded_batch_size` (a batch runs in the
  graph captured for the next size up).
* **FlashAttention-4 on Blackwell**: :func:`exp2_poly`, the software ``2**x`` of
  ``flash_attn/cute/utils.py``, and :func:`lazy_rescale_attention`, the online softmax that skips a
  rescale while the row maximum has grown by less than a threshold.
* **SageAttention**: :func:`int8_scores`, ``Q K^T`` from INT8 per-block codes, with or without
  subtracting the keys' mean over tokens first (Zhang et al. 2025, sec. 3.2).

Book: chapter "Attention backends in 2026".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int
from .flash import merge_softmax_states

#: Tile kinds of a block mask: no pair allowed (skipped), some pairs (masked), all pairs (unmasked).
EMPTY, PARTIAL, FULL = 0, 1, 2

#: Coefficients of the degree-3 polynomial for ``2**f`` on ``f`` in [0, 1), lowest degree first,
#: as FlashAttention-4 uses them (flash_attn/cute/utils.py, ``POLY_EX2[3]``, fitted with Sollya's
#: fpminimax). Copied.
POLY_EX2_DEG3 = (1.0, 0.695146143436431884765625, 0.227564394474029541015625, 0.077119089663028717041015625)


def _index_grids(num_heads, n, s):
    """Head, query and key indices shaped to broadcast to (h, n, s), as FlexAttention passes them."""
    return (np.arange(num_heads)[:, None, None], np.arange(n)[None, :, None], np.arange(s)[None, None, :])


def block_mask_from_mask_mod(mask_mod, num_heads, n, s, block_size):
    """Classify every (query block, key block) tile of a mask as EMPTY, PARTIAL or FULL.

    Parameters
    ----------
    mask_mod : callable
        ``mask_mod(head, q_idx, kv_idx) -> bool array``, vectorised over broadcast index arrays.
    num_heads, n, s, block_size : int
        Heads, queries, keys and the (square) tile edge.

    Returns
    -------
    ndarray of int8, shape (h, ceil(n / block_size), ceil(s / block_size))

    Book: chapter "Attention backends in 2026", section "FlexAttention".
    """
    bs = check_positive_int("block_size", block_size)
    allowed = np.broadcast_to(mask_mod(*_index_grids(num_heads, n, s)), (num_heads, n, s))
    tq, tk = -(-n // bs), -(-s // bs)
    padded = np.zeros((num_heads, tq * bs, tk * bs), dtype=np.int64)  # padding counts as "not allowed"
    padded[:, :n, :s] = allowed
    count = padded.reshape(num_heads, tq, bs, tk, bs).sum(axis=(2, 4))  # (h, tq, tk) allowed pairs
    rows = np.minimum(bs, n - bs * np.arange(tq))[:, None] * np.minimum(bs, s - bs * np.arange(tk))[None, :]
    kinds = np.where(count == 0, EMPTY, np.where(count == rows, FULL, PARTIAL))
    return kinds.astype(np.int8)


def flex_attention(q, k, v, score_mod=None, mask_mod=None, block_size=16):
    """Tiled attention with a ``score_mod`` and a ``mask_mod``, skipping EMPTY tiles.

    Parameters
    ----------
    q : ndarray, shape (h, n, d_h)
    k, v : ndarray, shape (h, s, d_h)
    score_mod : callable, optional
        ``score_mod(score, head, q_idx, kv_idx) -> score``, on the scaled scores of one tile.
    mask_mod : callable, optional
        ``mask_mod(head, q_idx, kv_idx) -> bool``; None allows every pair.
    block_size : int

    Returns
    -------
    out : ndarray, shape (h, n, d_h)
    tiles_computed : int
        Tiles that were not EMPTY (per head, summed over heads).

    Book: chapter "Attention backends in 2026", section "FlexAttention".
    """
    h, n, d_h = q.shape
    s, bs = k.shape[1], check_positive_int("block_size", block_size)
    mask_mod = mask_mod or (lambda head, qi, ki: np.ones(np.broadcast_shapes(head.shape, qi.shape, ki.shape), bool))
    kinds = block_mask_from_mask_mod(mask_mod, h, n, s, bs)
    m, tot, acc = np.full((h, n), -np.inf), np.zeros((h, n)), np.zeros((h, n, d_h))
    for j in range(kinds.shape[2]):
        heads, qi, ki = _index_grids(h, n, s)
        ki = ki[..., j * bs:(j + 1) * bs]
        scores = q @ np.swapaxes(k[:, ki[0, 0]], -1, -2) / np.sqrt(d_h)  # (h, n, d_h) @ (h, d_h, b) -> (h, n, b)
        if score_mod is not None:
            scores = score_mod(scores, heads, qi, ki)
        live = np.repeat(kinds[:, :, j] != EMPTY, bs, axis=1)[:, :n]  # (h, n): rows whose tile is computed
        scores = np.where(mask_mod(heads, qi, ki) & live[..., None], scores, -np.inf)
        block_m = scores.max(axis=-1)
        p = np.exp(scores - np.where(np.isneginf(block_m), 0.0, block_m)[..., None])
        m, tot, acc = merge_softmax_states((m, tot, acc), (block_m, p.sum(-1), p @ v[:, ki[0, 0]]))
    return acc / np.where(tot > 0, tot, 1.0)[..., None], int(np.count_nonzero(kinds))


def vllm_capture_sizes(max_size=512):
    """Batch sizes vLLM captures CUDA graphs for by default, up to ``max_size``.

    ``[1, 2, 4] + range(8, 256, 8) + range(256, max_size + 1, 16)`` (vLLM
    ``vllm/config/compilation.py``, ``max_cudagraph_capture_size``: by default
    ``min(2 * max_num_seqs, 512)``).

    Returns
    -------
    list of int, increasing
    """
    top = check_positive_int("max_size", max_size)
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, top + 1, 16))
    return [x for x in sizes if x <= top]


def padded_batch_size(batch_size, capture_sizes):
    """The captured size a batch is padded to: the smallest one at least ``batch_size``.

    Returns ``None`` when the batch is larger than every captured size (it then runs without the
    full graph).
    """
    b = check_positive_int("batch_size", batch_size)
    fits = [c for c in capture_sizes if c >= b]
    return min(fits) if fits else None


def exp2_poly(x, coeffs=POLY_EX2_DEG3):
    """``2**x`` computed as FlashAttention-4's software exponential: integer part by exponent bits.

    ``x = i + f`` with ``i = floor(x)`` and ``f`` in [0, 1); ``2**f`` is a polynomial (Horner's
    rule, fused multiply-adds on the FP32 units) and ``2**i`` is put into the exponent with
    ``ldexp``, no special-function unit needed. Inputs are clamped at -127, as in the kernel.

    Parameters
    ----------
    x : array_like of float, at most 127
    coeffs : sequence of float
        Polynomial coefficients, lowest degree first.

    Returns
    -------
    ndarray of float32
    """
    x = np.maximum(np.asarray(x, dtype=np.float32), np.float32(-127.0))
    i = np.floor(x)
    f = x - i  # in [0, 1)
    poly = np.full_like(f, coeffs[-1])
    for c in coeffs[-2::-1]:
        poly = poly * f + np.float32(c)
    return np.ldexp(poly, i.astype(np.int32)).astype(np.float32)


def lazy_rescale_attention(scores, v, threshold_log2, block_size):
    """Online softmax over key blocks that rescales only when the maximum grows by > ``threshold``.

    FlashAttention-4's Blackwell forward keeps the old row maximum while the new one exceeds it by
    at most ``threshold_log2`` in log2 units (``SoftmaxSm100.update_row_max``; 8.0 for 16-bit
    inputs), so the exponentials may reach ``2**threshold`` but the output, divided by the same
    stale sum at the end, is unchanged.

    Parameters
    ----------
    scores : ndarray, shape (n, s)
        Scaled scores (natural-log units).
    v : ndarray, shape (s, d_v)
    threshold_log2 : float
        0 rescales at every increase (the ordinary online softmax).
    block_size : int

    Returns
    -------
    out : ndarray, shape (n, d_v)
    rescales : int
        Row-blocks where the accumulator was rescaled.
    """
    n, s = scores.shape
    bs = check_positive_int("block_size", block_size)
    m, tot, acc, rescales = np.full(n, -np.inf), np.zeros(n), np.zeros((n, v.shape[1])), 0
    for j in range(0, s, bs):
        block = scores[:, j:j + bs]
        new_m = np.maximum(m, block.max(axis=1))
        grow = (new_m - m) / np.log(2.0)  # log2 units; inf on the first block
        keep = grow <= threshold_log2  # keep the stale maximum
        rescales += int(np.count_nonzero(~keep & np.isfinite(m)))
        m_used = np.where(keep, m, new_m)
        alpha = np.exp(m - m_used)  # 1 where kept
        p = np.exp(block - m_used[:, None])
        tot, acc, m = alpha * tot + p.sum(axis=1), alpha[:, None] * acc + p @ v[j:j + bs], m_used
    return acc / tot[:, None], rescales


def quantize_int8_blocks(x, block_size):
    """Symmetric INT8 codes with one scale per block of ``block_size`` rows (tokens).

    Parameters
    ----------
    x : ndarray, shape (t, d_h)
    block_size : int

    Returns
    -------
    codes : ndarray of int8, shape (t, d_h)
    scales : ndarray of float64, shape (t, 1)
        Each row's block scale, ``max|x| / 127`` over the block.
    """
    bs = check_positive_int("block_size", block_size)
    t = x.shape[0]
    block_of_row = np.arange(t) // bs
    peaks = np.array([np.abs(x[block_of_row == b]).max() for b in range(block_of_row[-1] + 1)])
    scales = np.where(peaks > 0, peaks / 127.0, 1.0)[block_of_row][:, None]  # (t, 1)
    return np.clip(np.rint(x / scales), -127, 127).astype(np.int8), scales


def int8_scores(q, k, block_q, block_k, smooth_k):
    """``Q K^T`` from INT8 per-block codes, as SageAttention computes it.

    With ``smooth_k`` the mean of ``K`` over tokens is subtracted before quantizing. Softmax is
    unchanged by it: the subtracted term ``q . mean(K)`` is the same for every key of a query row
    (SageAttention sec. 3.2), so the scores returned differ from the exact ones by that row
    constant, which the comparison must add back (``smooth_k`` returns them with it added).

    Parameters
    ----------
    q : ndarray, shape (n, d_h)
    k : ndarray, shape (s, d_h)
    block_q, block_k : int
        Tokens per quantization block.
    smooth_k : bool

    Returns
    -------
    ndarray of float64, shape (n, s)
        Dequantized scores (unscaled, without ``1/sqrt(d_h)``).
    """
    mean = k.mean(axis=0, keepdims=True) if smooth_k else np.zeros((1, k.shape[1]))  # (1, d_h)
    q_codes, q_scales = quantize_int8_blocks(q, block_q)
    k_codes, k_scales = quantize_int8_blocks(k - mean, block_k)
    exact_int = q_codes.astype(np.int32) @ k_codes.astype(np.int32).T  # INT8 x INT8 -> INT32 accumulate
    return exact_int * q_scales * k_scales.T + q @ mean.T  # (n, s) + the row constant, (n, 1)


#: What two of vLLM's attention backends accept, as their ``supports_*`` methods say (vLLM source
#: read December 2026: ``vllm/v1/attention/backends/flash_attn.py`` and ``flashinfer.py``), per GPU
#: family: ``fp8_cache`` (an FP8 KV cache), ``sinks`` (learned attention sinks, gpt-oss),
#: ``head_sizes`` (allowed head sizes) and ``block_sizes`` (allowed KV-cache block sizes, tokens).
#: FlashAttention: FP8 only from the FA3 build (Hopper), sinks from FA3 on and compute capability
#: 9.0 up, head sizes multiples of 8 up to 256, blocks multiples of 16. FlashInfer: FP8 caches,
#: sinks only through its TRT-LLM kernels (Blackwell), head sizes 64, 128, 256, blocks 16, 32, 64.
VLLM_BACKEND_FEATURES = {
    ("FLASH_ATTN", "hopper"): dict(fp8_cache=True, sinks=True, head_sizes=tuple(range(8, 257, 8)),
                                   block_sizes=tuple(range(16, 1025, 16))),
    ("FLASHINFER", "hopper"): dict(fp8_cache=True, sinks=False, head_sizes=(64, 128, 256), block_sizes=(16, 32, 64)),
    ("FLASHINFER", "blackwell"): dict(fp8_cache=True, sinks=True, head_sizes=(64, 128, 256), block_sizes=(16, 32, 64)),
}

#: vLLM's order of preference for a model without MLA (``vllm/platforms/cuda.py``,
#: ``_get_backend_priorities``): compute capability 10.x (Blackwell) against the others.
VLLM_PRIORITIES = {
    "hopper": ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"),
    "blackwell": ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION"),
}


def backend_rejections(features, head_size, block_size, fp8_cache=False, sinks=False):
    """Why a backend with ``features`` cannot serve a layer: the list ``validate_configuration`` builds.

    Parameters
    ----------
    features : dict
        One entry of :data:`VLLM_BACKEND_FEATURES`.
    head_size, block_size : int
    fp8_cache, sinks : bool
        Whether the model is served with an FP8 cache, and has learned sinks.

    Returns
    -------
    list of str
        Empty when the backend can serve it.
    """
    reasons = []
    if head_size not in features["head_sizes"]:
        reasons.append("head_size not supported")
    if block_size not in features["block_sizes"]:
        reasons.append("block_size not supported")
    if fp8_cache and not features["fp8_cache"]:
        reasons.append("kv_cache_dtype not supported")
    if sinks and not features["sinks"]:
        reasons.append("attention sinks not supported")
    return reasons
