"""What a DeepSeek-V4-style hybrid of compressed attention layers keeps per sequence.

DeepSeek-V4 gives every layer a sliding window of recent positions and, in most layers, a pool
of *compressed* entries: one entry per ``m`` source tokens, pooled by a learned gate. Compressed
Sparse Attention (CSA, ``m = 4``) also keeps a smaller indexer key per compressed entry, which a
lightning indexer scores to pick the entries a query reads; Heavily Compressed Attention (HCA,
``m = 128``) reads all of its entries and has no indexer. One entry of ``head_dim`` numbers
serves as both key and value (shared-KV MQA). Sources: the DeepSeek-V4 report, sec. 2.3.1-2.3.2,
as implemented by Hugging Face transformers ``DeepseekV4CSACache`` and ``DeepseekV4HCACache``
(``modular_deepseek_v4.py``); the per-layer ratios are the ``compress_ratios`` of the
checkpoint's ``config.json`` (0: window only).

Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
"""
from __future__ import annotations

from .config import check_positive_int


def compressed_cache_numbers(context_len, compress_ratios, head_dim, index_head_dim, window,
                             indexed_ratio=4) -> tuple[int, int]:
    """Numbers one sequence keeps, summed over layers: ``(window_numbers, compressed_numbers)``.

    Parameters
    ----------
    context_len : int
        Tokens in the sequence.
    compress_ratios : sequence of int
        One ratio per attention layer: 0 for a window-only layer, ``m`` for a layer that pools
        every ``m`` tokens into one entry.
    head_dim : int
        Numbers per entry (the shared key and value).
    index_head_dim : int
        Numbers per indexer key, kept only by layers whose ratio is ``indexed_ratio``.
    window : int
        Recent positions every layer keeps uncompressed.
    indexed_ratio : int
        The ratio of the layers that carry a lightning indexer (CSA).

    Returns
    -------
    (int, int)
        Window entries times ``head_dim`` over all layers (bounded by ``window``), and compressed
        entries plus indexer keys over all layers (growing with ``context_len``). Only complete
        groups of ``m`` tokens are pooled; the remainder waits in a buffer and is not counted.
    """
    n = check_positive_int("context_len", context_len)
    d, d_index = check_positive_int("head_dim", head_dim), check_positive_int("index_head_dim", index_head_dim)
    w = check_positive_int("window", window)
    if len(compress_ratios) == 0 or any(int(r) < 0 for r in compress_ratios):
        raise ValueError(f"compress_ratios must be a non-empty list of ratios >= 0 (0 = window only), "
                         f"got {list(compress_ratios)}")
    window_numbers = len(compress_ratios) * min(n, w) * d
    compressed = 0
    for r in (int(r) for r in compress_ratios):
        if r > 0:
            entries = n // r  # complete groups of r tokens
            compressed += entries * (d + (d_index if r == indexed_ratio else 0))
    return window_numbers, compressed
