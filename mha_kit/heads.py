"""What heads buy and how they are split: score ranks, tensor parallelism, a fused QKV matrix.

Each head scores with ``q_i k_j^T`` where ``q`` and ``k`` have ``d_h`` columns, so a head's
``(n, s)`` score matrix has rank at most ``d_h``: the low-rank bottleneck of a small head.
Several heads give several such patterns side by side.

Under tensor parallelism (Megatron-LM style) the query heads are dealt to devices in equal
contiguous runs; every device computes its heads alone and one sum (an all-reduce) over the
devices' partial output projections gives the layer's output. Key-value heads go with their
query heads; when there are fewer key-value heads than devices, each is replicated.

Book: chapter "Why several heads".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import _as_tokens, _head_dims, causal_mask, grouped_attention, merge_heads, split_heads
from .config import AttentionConfig, check_positive_int
from .units import elements_to_bytes


def head_scores(x, w_q, w_k, num_heads, num_kv_heads=None):
    """Pre-softmax scores of every head, ``q k^T / sqrt(d_h)``.

    Parameters
    ----------
    x : ndarray, shape (n, d)
    w_q : ndarray, shape (d, h * d_h)
    w_k : ndarray, shape (d, h_kv * d_h)
    num_heads : int
    num_kv_heads : int, optional

    Returns
    -------
    ndarray, shape (h, n, n): head ``i`` uses key head ``i // (h // h_kv)``; rank at most ``d_h``.
    """
    x, w_q, w_k = _as_tokens(x), np.asarray(w_q), np.asarray(w_k)
    h = check_positive_int("num_heads", num_heads)
    h_kv = h if num_kv_heads is None else check_positive_int("num_kv_heads", num_kv_heads)
    if h % h_kv:
        raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({h_kv})")
    if w_q.ndim != 2 or w_q.shape[0] != x.shape[-1] or w_q.shape[1] % h:
        raise ValueError(f"expected w_q of shape ({x.shape[-1]}, num_heads * head_dim) with num_heads={h}, got {w_q.shape}")
    d_h = w_q.shape[1] // h
    if w_k.shape != (x.shape[-1], h_kv * d_h):
        raise ValueError(f"expected w_k of shape ({x.shape[-1]}, {h_kv * d_h}) = (d, num_kv_heads * head_dim), got {w_k.shape}")
    q = split_heads(x @ w_q, h)  # (n, d) @ (d, h*d_h) -> (h, n, d_h)
    k = np.repeat(split_heads(x @ w_k, h_kv), h // h_kv, axis=-3)  # (h_kv, n, d_h) -> (h, n, d_h): [K0, K0, K1, K1]
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)  # (h, n, d_h) @ (h, d_h, n) -> (h, n, n)


# --- Tensor parallelism ------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadShard:
    """The heads one device holds under tensor parallelism."""

    device: int  # 0 .. num_devices - 1
    query_heads: tuple  # indices of the query heads it computes
    kv_heads: tuple  # indices of the key-value heads it stores (a replica when shared)


def shard_heads(num_heads, num_kv_heads, num_devices):
    """Deal ``h`` query heads and ``h_kv`` key-value heads to ``num_devices`` devices.

    Query heads go in equal contiguous runs: device ``r`` gets heads ``r*h/D .. (r+1)*h/D - 1``.
    With ``h_kv >= D`` the key-value heads are split the same way; with ``h_kv < D`` each is
    replicated on ``D / h_kv`` devices. Either way a device holds every key-value head its query
    heads read (query head ``i`` reads key-value head ``i // (h // h_kv)``).

    For ``h = 8, h_kv = 2, D = 4``: devices hold query heads ``[0,1], [2,3], [4,5], [6,7]`` and
    key-value heads ``[0], [0], [1], [1]``: each key-value head twice.

    Returns
    -------
    list of HeadShard, one per device
    """
    h = check_positive_int("num_heads", num_heads)
    h_kv = check_positive_int("num_kv_heads", num_kv_heads)
    n_dev = check_positive_int("num_devices", num_devices)
    if h % h_kv:
        raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({h_kv})")
    if h % n_dev:
        raise ValueError(f"num_heads ({h}) must be divisible by num_devices ({n_dev}): each device computes whole heads")
    if h_kv % n_dev and n_dev % h_kv:
        raise ValueError(f"num_kv_heads ({h_kv}) and num_devices ({n_dev}) must divide one another: "
                         "key-value heads are either split evenly or replicated evenly")
    q_per, g = h // n_dev, h // h_kv
    shards = []
    for r in range(n_dev):
        queries = tuple(range(r * q_per, (r + 1) * q_per))
        kv = tuple(sorted({i // g for i in queries}))  # the key-value heads these queries read
        shards.append(HeadShard(r, queries, kv))
    return shards


def kv_replication(num_kv_heads, num_devices) -> int:
    """Copies of each key-value head across the devices: ``max(1, D / h_kv)``."""
    h_kv = check_positive_int("num_kv_heads", num_kv_heads)
    n_dev = check_positive_int("num_devices", num_devices)
    if h_kv % n_dev and n_dev % h_kv:
        raise ValueError(f"num_kv_heads ({h_kv}) and num_devices ({n_dev}) must divide one another: "
                         "key-value heads are either split evenly or replicated evenly")
    return max(1, n_dev // h_kv)


def kv_cache_bytes_per_device(cfg: AttentionConfig, num_devices, fmt="bf16") -> int:
    """Cache bytes per token that each device stores under tensor parallelism, all layers.

    Each device stores ``max(h_kv / D, 1)`` key-value heads: a share when ``h_kv >= D``, one
    replicated head when ``h_kv < D``.
    """
    if not isinstance(cfg, AttentionConfig):
        raise ValueError(f"expected an AttentionConfig, got {type(cfg).__name__}")
    shards = shard_heads(cfg.num_heads, cfg.num_kv_heads, num_devices)
    heads = len(shards[0].kv_heads)
    return elements_to_bytes(cfg.num_layers * 2 * heads * cfg.head_dim, fmt)


# --- Fused QKV ---------------------------------------------------------------------------------


def fuse_qkv(w_q, w_k, w_v):
    """One ``(d, (h + 2 h_kv) d_h)`` matrix: the three projections side by side.

    One product ``x @ w_qkv`` reads ``x`` once and launches one matrix multiply instead of three;
    :func:`split_qkv` cuts the result back into queries, keys and values.
    """
    w_q, w_k, w_v = (np.asarray(w) for w in (w_q, w_k, w_v))
    if w_q.ndim != 2 or w_k.shape != w_v.shape or w_k.ndim != 2 or w_k.shape[0] != w_q.shape[0]:
        raise ValueError(f"expected w_q (d, h*d_h) and w_k, w_v (d, h_kv*d_h) with the same d, "
                         f"got {w_q.shape}, {w_k.shape}, {w_v.shape}")
    return np.concatenate([w_q, w_k, w_v], axis=1)  # (d, h*d_h + 2*h_kv*d_h)


def split_qkv(y, num_heads, num_kv_heads, head_dim):
    """``(..., n, (h + 2 h_kv) d_h)`` -> ``q (..., h, n, d_h)``, ``k, v (..., h_kv, n, d_h)``."""
    y = np.asarray(y)
    h, h_kv = check_positive_int("num_heads", num_heads), check_positive_int("num_kv_heads", num_kv_heads)
    d_h = check_positive_int("head_dim", head_dim)
    if y.shape[-1] != (h + 2 * h_kv) * d_h:
        raise ValueError(f"expected a last axis of (num_heads + 2 * num_kv_heads) * head_dim = "
                         f"{(h + 2 * h_kv) * d_h}, got {y.shape[-1]}")
    q, k, v = np.split(y, [h * d_h, (h + h_kv) * d_h], axis=-1)
    return split_heads(q, h), split_heads(k, h_kv), split_heads(v, h_kv)


def _device_weights(w_q, w_k, w_v, w_o, shard, d_h):
    """Device ``shard``'s fused QKV columns ``(d, (h_r + 2 h_kv_r) d_h)`` and its ``w_o`` rows."""
    def cols(heads):
        return np.concatenate([np.arange(i * d_h, (i + 1) * d_h) for i in heads])

    w_qkv = fuse_qkv(w_q[:, cols(shard.query_heads)], w_k[:, cols(shard.kv_heads)], w_v[:, cols(shard.kv_heads)])
    return w_qkv, w_o[cols(shard.query_heads)]  # column slices in, row slice of W_O out


def tensor_parallel_attention(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, num_devices, causal=False):
    """Multi-head attention computed as ``num_devices`` devices would, then summed.

    Device ``r`` multiplies ``x`` by its fused QKV columns, attends with its own heads, and
    multiplies by its rows of ``W_O``; the partial outputs are added (the all-reduce). Equals
    :func:`mha_kit.multi_head_attention` up to rounding.

    Returns
    -------
    out : ndarray, shape (n, d)
    partials : list of ndarray, shape (n, d): each device's contribution before the sum
    """
    x = _as_tokens(x)
    w_q, w_k, w_v, w_o = (np.asarray(w) for w in (w_q, w_k, w_v, w_o))
    h, h_kv, d_h = _head_dims(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads)
    mask = causal_mask(x.shape[-2]) if causal else None
    partials = []
    for shard in shard_heads(h, h_kv, num_devices):
        w_qkv, w_o_rows = _device_weights(w_q, w_k, w_v, w_o, shard, d_h)
        q, k, v = split_qkv(x @ w_qkv, len(shard.query_heads), len(shard.kv_heads), d_h)  # one product
        heads, _ = grouped_attention(q, k, v, mask)  # (h_r, n, d_h)
        partials.append(merge_heads(heads) @ w_o_rows)  # (n, h_r*d_h) @ (h_r*d_h, d) -> (n, d)
    return np.sum(partials, axis=0), partials


def prune_heads(pruned, num_heads, num_kv_heads):
    """Shape left after removing query heads from a grouped-query layer: ``(h, h_kv)``.

    Query head ``i`` reads key-value head ``i // g`` (``g = h // h_kv``). A key-value head, and its
    slice of the cache, can go only when *every* query head of its group is removed; otherwise the
    surviving query heads still read it.

    Parameters
    ----------
    pruned : iterable of int
        Indices of the query heads removed, each in ``[0, num_heads)``.
    num_heads, num_kv_heads : int

    Returns
    -------
    (int, int): query heads and key-value heads left.

    Book: chapter "Why attention looks like this", section on pruning heads.
    """
    h, h_kv = check_positive_int("num_heads", num_heads), check_positive_int("num_kv_heads", num_kv_heads)
    if h % h_kv:
        raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({h_kv})")
    pruned = set(int(i) for i in pruned)
    if any(not 0 <= i < h for i in pruned) or len(pruned) == h:
        raise ValueError(f"pruned heads must lie in [0, {h}) and leave at least one, got {sorted(pruned)}")
    g = h // h_kv
    empty_groups = sum(all(j * g + r in pruned for r in range(g)) for j in range(h_kv))
    return h - len(pruned), h_kv - empty_groups
