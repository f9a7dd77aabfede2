"""Masks as tensors, and packing several documents into one row.

* :func:`dense_mask_bytes`: what a materialised ``n x n`` attention mask occupies (the tensor that
  ``is_causal=True`` and the flash kernels never build);
* :func:`pack_documents`: the ``cu_seqlens`` of a varlen kernel (flash-attention's
  ``flash_attn_varlen_func``) and the position ids restarted at 0 in each document;
* :func:`padding_fraction`: the share of a padded ``(B, max_len)`` batch that is padding.

Book: chapters "FlashAttention-2 and Flash-Decoding" and "Attention backends".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def dense_mask_bytes(n, bytes_per_element, batch=1, heads=1) -> int:
    """Bytes of a dense ``(batch, heads, n, n)`` mask: ``batch * heads * n**2 * bytes_per_element``.

    A ``torch.bool`` mask has 1 byte per element, an additive bf16 mask (``0`` / ``-inf``) 2, fp32 4.
    Raises ``ValueError`` unless every argument is a positive integer.
    """
    n = check_positive_int("n", n)
    per = check_positive_int("bytes_per_element", bytes_per_element)
    return check_positive_int("batch", batch) * check_positive_int("heads", heads) * n * n * per


def pack_documents(lengths):
    """``cu_seqlens`` and restarted position ids for documents packed into one row.

    Parameters
    ----------
    lengths : sequence of int, shape (D,)
        Token count of each document, in packing order; each must be positive.

    Returns
    -------
    cu_seqlens : ndarray of int32, shape (D + 1,)
        ``[0, l0, l0 + l1, ...]``: document ``i`` occupies ``cu_seqlens[i]:cu_seqlens[i + 1]``.
    position_ids : ndarray of int64, shape (sum(lengths),)
        ``0, 1, ..., l_i - 1`` for each document, so RoPE sees each one start at position 0.
    """
    lengths = [check_positive_int(f"lengths[{i}]", x) for i, x in enumerate(lengths)]
    if not lengths:
        raise ValueError("lengths must name at least one document, got an empty sequence")
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)  # (D + 1,)
    pos = np.concatenate([np.arange(x) for x in lengths]).astype(np.int64)  # (total,)
    return cu, pos


def padding_fraction(lengths) -> float:
    """Share of a ``(len(lengths), max(lengths))`` padded batch that is padding: ``1 - sum / (D * max)``."""
    lengths = [check_positive_int(f"lengths[{i}]", x) for i, x in enumerate(lengths)]
    if not lengths:
        raise ValueError("lengths must name at least one document, got an empty sequence")
    return 1.0 - sum(lengths) / (len(lengths) * max(lengths))
