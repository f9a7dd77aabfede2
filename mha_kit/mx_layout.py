"""Microscaling (MX) tensors in memory: their bytes, and the (16, 16) pre-shuffled weight layout.

Book: chapters "MLA as it is served" (an MXFP4 latent cache) and "Weight quantization" (why kernels
pre-shuffle their weights).
"""
from __future__ import annotations


def mx_bytes(num_values: int, bits: int = 4, block: int = 32, scale_bytes: int = 1) -> int:
    """Bytes of ``num_values`` numbers stored as ``bits``-bit elements with one scale per ``block``.

    OCP MX v1.0: MXFP4 is E2M1 (4 bits) with one E8M0 scale (1 byte) per 32 elements; NVFP4 is
    E2M1 with one E4M3 scale (1 byte) per 16.

    Parameters
    ----------
    num_values : int
        Elements stored (for one token of an MLA cache, the latent and rotary widths together).
    bits, block, scale_bytes : int
        Element width, elements per scale, and bytes of one scale.

    Returns
    -------
    int
        ``num_values * bits / 8 + ceil(num_values / block) * scale_bytes``.
    """
    if num_values <= 0 or block <= 0 or (num_values * bits) % 8:
        raise ValueError(f"need num_values > 0, block > 0 and whole bytes (num_values * bits % 8 == 0), "
                         f"got num_values={num_values}, bits={bits}, block={block}")
    return num_values * bits // 8 + -(-num_values // block) * scale_bytes


def shuffle_weight_16x16(w):
    """AITER's ``shuffle_weight(w, layout=(16, 16))`` for one-byte elements (FP8, or FP4 packed two a byte).

    Each 16-row by 32-byte block of the row-major weight is stored as two 16 x 16-byte tiles, one after
    the other, so sixteen lanes that each load 16 bytes read one contiguous 256-byte run.

    Parameters
    ----------
    w : ndarray, shape (n, k_bytes)
        Row-major weight bytes; ``n`` a multiple of 16, ``k_bytes`` a multiple of 32.

    Returns
    -------
    ndarray, shape (n, k_bytes)
        The same bytes in the pre-shuffled order (reshaped back to the input's shape).
    """
    n, k = w.shape
    if n % 16 or k % 32:
        raise ValueError(f"rows must be a multiple of 16 and byte columns of 32, got shape {w.shape}")
    tiles = w.reshape(n // 16, 16, k // 32, 2, 16)  # (n/16, 16 rows, k/32, 2 chunks, 16 bytes)
    return tiles.transpose(0, 2, 3, 1, 4).reshape(n, k)  # -> (n/16, k/32, 2, 16 rows, 16 bytes)
