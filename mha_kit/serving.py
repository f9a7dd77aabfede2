"""The KV cache in a serving system: paging, prefix sharing, a rolling window, 8-bit storage.

A server keeps the cache of many sequences at once. Reserving ``max_len`` tokens for every
request wastes what short requests never use; a **paged** cache instead hands out fixed-size
blocks from one pool as a sequence grows, and a per-sequence block table maps token ``t`` to
slot ``t % block_size`` of block ``block_table[t // block_size]`` (vLLM's PagedAttention). Two
requests with the same prompt prefix can point at the same blocks. A **rolling** cache keeps
only the last ``window`` tokens for sliding-window attention, and a quantized cache stores
8-bit integers with one scale per key-value head.

:class:`PagedKVCache` has the interface of :class:`mha_kit.KVCache` (``num_kv_heads``,
``head_dim``, ``append``, ``keys``, ``values``, ``len``), so :func:`mha_kit.cached_attention`
runs through it unchanged.

Book: chapter "Serving the KV cache".
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .attention import _as_tokens, _head_dims, grouped_attention, merge_heads, sliding_window_mask, split_heads
from .config import check_positive_int
from .quantization import quantize_kv_codes


def _check_kv(k, v, num_kv_heads, head_dim):
    """``k``, ``v`` as arrays of shape ``(h_kv, t, d_h)``; the messages of :meth:`KVCache.append`."""
    k, v = np.asarray(k), np.asarray(v)
    for name, a in (("k", k), ("v", v)):
        if a.ndim != 3 or (a.shape[0], a.shape[2]) != (num_kv_heads, head_dim):
            raise ValueError(f"expected {name} of shape ({num_kv_heads}, t, {head_dim}), got {a.shape}")
    if k.shape[1] != v.shape[1]:
        raise ValueError(f"k and v must hold the same number of tokens, got {k.shape[1]} and {v.shape[1]}")
    return k, v


# --- Paging ----------------------------------------------------------------------------------


class BlockPool:
    """Physical storage shared by every sequence: ``num_blocks`` blocks of ``block_size`` tokens.

    Each block holds keys and values of shape ``(h_kv, block_size, d_h)`` and a reference
    count: how many block tables point at it. A block returns to the free list when its count
    drops to zero.

    Parameters
    ----------
    num_blocks, block_size, num_kv_heads, head_dim : int
    dtype : numpy dtype
    """

    def __init__(self, num_blocks, block_size, num_kv_heads, head_dim, dtype=np.float64):
        self.num_blocks = check_positive_int("num_blocks", num_blocks)
        self.block_size = check_positive_int("block_size", block_size)
        self.num_kv_heads = check_positive_int("num_kv_heads", num_kv_heads)
        self.head_dim = check_positive_int("head_dim", head_dim)
        shape = (self.num_blocks, self.num_kv_heads, self.block_size, self.head_dim)
        self.k = np.zeros(shape, dtype=dtype)  # (blocks, h_kv, block_size, d_h)
        self.v = np.zeros_like(self.k)
        self.ref_count = np.zeros(self.num_blocks, dtype=np.int64)
        self._free = list(range(self.num_blocks - 1, -1, -1))  # pop() hands out block 0 first

    @property
    def num_free(self) -> int:
        """Blocks no table points at."""
        return len(self._free)

    @property
    def num_used(self) -> int:
        """Blocks at least one table points at."""
        return self.num_blocks - len(self._free)

    @property
    def block_nbytes(self) -> int:
        """Bytes of one block, keys and values."""
        return int(self.k[0].nbytes + self.v[0].nbytes)

    def allocate(self) -> int:
        """Take a free block (reference count 1) and return its index."""
        if not self._free:
            raise ValueError(f"block pool exhausted: all {self.num_blocks} blocks of "
                             f"{self.block_size} tokens are in use")
        block = self._free.pop()
        self.ref_count[block] = 1
        return block

    def retain(self, block):
        """One more table points at ``block``."""
        self._check_in_use(block)
        self.ref_count[block] += 1

    def release(self, block):
        """One table fewer points at ``block``; it is freed when none is left."""
        self._check_in_use(block)
        self.ref_count[block] -= 1
        if self.ref_count[block] == 0:
            self._free.append(block)

    def _check_in_use(self, block):
        if not 0 <= block < self.num_blocks or self.ref_count[block] == 0:
            raise ValueError(f"block {block} is not in use (pool of {self.num_blocks} blocks)")


class PagedKVCache:
    """One sequence's cache: a block table into a shared :class:`BlockPool`.

    Token ``t`` lives in slot ``t % block_size`` of block ``block_table[t // block_size]``; the
    blocks need not be adjacent or in order. :attr:`keys` and :attr:`values` gather them back
    into ``(h_kv, s, d_h)``, which is what an attention kernel over pages reads block by block.

    Book: chapter "Serving the KV cache".
    """

    def __init__(self, pool: BlockPool):
        if not isinstance(pool, BlockPool):
            raise ValueError(f"expected a BlockPool, got {type(pool).__name__}")
        self.pool = pool
        self.block_table = []  # logical block i -> physical block index
        self.length = 0

    num_kv_heads = property(lambda self: self.pool.num_kv_heads)
    head_dim = property(lambda self: self.pool.head_dim)

    def __len__(self):
        return self.length

    def append(self, k, v):
        """Store ``t`` new tokens, ``k`` and ``v`` of shape ``(h_kv, t, d_h)``, block by block.

        A shared last block (reference count above one, after :meth:`fork`) is copied before
        it is written: copy-on-write, so the other sequences never see this one's tokens.
        """
        k, v = _check_kv(k, v, self.num_kv_heads, self.head_dim)
        size, t = self.pool.block_size, k.shape[1]
        new_blocks = -(-(self.length + t) // size) - len(self.block_table)
        shared_tail = self.length % size and self.pool.ref_count[self.block_table[-1]] > 1
        if new_blocks + bool(shared_tail) > self.pool.num_free:
            raise ValueError(f"block pool exhausted: {t} more tokens need {new_blocks + bool(shared_tail)} "
                             f"blocks, {self.pool.num_free} of {self.pool.num_blocks} are free")
        if shared_tail:
            self._copy_tail()
        self.block_table += [self.pool.allocate() for _ in range(new_blocks)]
        positions = np.arange(self.length, self.length + t)
        blocks = np.asarray(self.block_table, dtype=np.intp)[positions // size]  # (t,) physical block of each token
        slots = positions % size  # (t,) its slot in that block
        self.pool.k[blocks, :, slots] = k.transpose(1, 0, 2)  # (h_kv, t, d_h) -> (t, h_kv, d_h)
        self.pool.v[blocks, :, slots] = v.transpose(1, 0, 2)
        self.length += t

    def _copy_tail(self):
        """Give this sequence its own copy of the shared, partly filled last block."""
        old = self.block_table[-1]
        new = self.pool.allocate()
        self.pool.k[new], self.pool.v[new] = self.pool.k[old], self.pool.v[old]
        self.pool.release(old)
        self.block_table[-1] = new

    def _gather(self, store):
        blocks = store[self.block_table]  # (b, h_kv, block_size, d_h), a copy
        blocks = blocks.transpose(1, 0, 2, 3).reshape(self.num_kv_heads, -1, self.head_dim)  # (h_kv, b*size, d_h)
        return blocks[:, : self.length]

    @property
    def keys(self):
        """ndarray, shape (h_kv, s, d_h): the keys in token order (gathered, a copy)."""
        return self._gather(self.pool.k)

    @property
    def values(self):
        """ndarray, shape (h_kv, s, d_h): the values in token order (gathered, a copy)."""
        return self._gather(self.pool.v)

    @property
    def nbytes(self) -> int:
        """Bytes of the blocks this sequence points at (whole blocks, shared ones included)."""
        return len(self.block_table) * self.pool.block_nbytes

    def fork(self) -> "PagedKVCache":
        """A new sequence that shares every block of this one by reference (prefix sharing)."""
        other = PagedKVCache(self.pool)
        for block in self.block_table:
            self.pool.retain(block)
        other.block_table, other.length = list(self.block_table), self.length
        return other

    def free(self):
        """Return this sequence's blocks to the pool (shared ones stay for their other users)."""
        for block in self.block_table:
            self.pool.release(block)
        self.block_table, self.length = [], 0


@dataclass(frozen=True)
class CacheSlots:
    """Token slots a batch of requests occupies under three allocation policies."""

    used: int  # tokens actually stored: sum of the lengths
    reserved: int  # max_len slots per request, the contiguous pre-allocation
    paged: int  # whole blocks per request: block_size * ceil(length / block_size)

    def fraction_used(self, policy) -> float:
        """Share of the allocated slots holding tokens, for ``"reserved"`` or ``"paged"``."""
        if policy not in ("reserved", "paged"):
            raise ValueError(f"policy must be 'reserved' or 'paged', got {policy!r}")
        return self.used / getattr(self, policy)


def cache_slots(lengths, max_len, block_size) -> CacheSlots:
    """Slots used, reserved for ``max_len`` per request, and held in blocks, for ``lengths``.

    Parameters
    ----------
    lengths : sequence of int
        Final length (prompt plus output) of each request, each at most ``max_len``.
    max_len, block_size : int

    Returns
    -------
    CacheSlots
        Exact integers; multiply by :func:`mha_kit.kv_cache_bytes_per_token` for bytes.
    """
    max_len = check_positive_int("max_len", max_len)
    size = check_positive_int("block_size", block_size)
    lengths = [check_positive_int("length", n) for n in lengths]
    if not lengths:
        raise ValueError("lengths must name at least one request, got none")
    if max(lengths) > max_len:
        raise ValueError(f"a request of {max(lengths)} tokens exceeds max_len ({max_len})")
    paged = sum(size * -(-n // size) for n in lengths)
    return CacheSlots(used=sum(lengths), reserved=max_len * len(lengths), paged=paged)


def shared_prefix_blocks(prefix_len, suffix_lens, block_size) -> tuple[int, int]:
    """Blocks for requests that share a prompt prefix: ``(without sharing, with sharing)``.

    Without sharing, request ``i`` holds ``ceil((prefix_len + suffix_i) / block_size)`` blocks.
    With sharing, the ``prefix_len // block_size`` full prefix blocks are stored once; a partly
    filled last prefix block is copied by each request on its first write (copy-on-write), so
    it counts in every request's own blocks.
    """
    prefix = check_positive_int("prefix_len", prefix_len)
    size = check_positive_int("block_size", block_size)
    suffixes = [check_positive_int("suffix length", n) for n in suffix_lens]
    if not suffixes:
        raise ValueError("suffix_lens must name at least one request, got none")
    unshared = sum(-(-(prefix + n) // size) for n in suffixes)
    full, rest = divmod(prefix, size)
    return unshared, full + sum(-(-(rest + n) // size) for n in suffixes)


# --- Sliding window: the rolling cache ---------------------------------------------------------


class RollingKVCache:
    """Keys and values of the last ``window`` tokens only, in a ring buffer of ``window`` slots.

    Token ``t`` is written to slot ``t % window``, over the token ``window`` positions older,
    which a sliding-window layer can no longer see (Mistral 7B's rolling buffer). The memory
    stops growing once ``window`` tokens have been seen.

    Parameters
    ----------
    num_kv_heads, head_dim, window : int
    dtype : numpy dtype

    Book: chapter "Serving the KV cache".
    """

    def __init__(self, num_kv_heads, head_dim, window, dtype=np.float64):
        self.num_kv_heads = check_positive_int("num_kv_heads", num_kv_heads)
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.window = check_positive_int("window", window)
        self._k = np.zeros((self.num_kv_heads, self.window, self.head_dim), dtype=dtype)  # (h_kv, W, d_h)
        self._v = np.zeros_like(self._k)
        self.seen = 0  # tokens appended so far; the next one has position ``seen``

    def __len__(self):
        """Tokens held: ``min(seen, window)``."""
        return min(self.seen, self.window)

    def _order(self):
        """Slots of the held tokens, oldest first: positions ``seen - len .. seen - 1``."""
        return (np.arange(self.seen - len(self), self.seen)) % self.window

    @property
    def keys(self):
        """ndarray, shape (h_kv, min(seen, W), d_h): the held keys, oldest first."""
        return self._k[:, self._order()]

    @property
    def values(self):
        """ndarray, shape (h_kv, min(seen, W), d_h): the held values, oldest first."""
        return self._v[:, self._order()]

    @property
    def nbytes(self) -> int:
        """Bytes held by the buffer: ``window`` slots, however many tokens have been seen."""
        return int(self._k.nbytes + self._v.nbytes)

    def append(self, k, v):
        """Write ``t`` tokens of shape ``(h_kv, t, d_h)``; only the last ``window`` survive."""
        k, v = _check_kv(k, v, self.num_kv_heads, self.head_dim)
        t = k.shape[1]
        keep = min(t, self.window)  # of a chunk longer than the window, the rest is overwritten anyway
        slots = np.arange(self.seen + t - keep, self.seen + t) % self.window
        self._k[:, slots], self._v[:, slots] = k[:, t - keep:], v[:, t - keep:]
        self.seen += t


def rolling_cached_attention(x_new, w_q, w_k, w_v, w_o, num_heads, cache):
    """Sliding-window causal attention of ``t`` new tokens through a :class:`RollingKVCache`.

    The new tokens attend over the held tokens and themselves, each seeing itself and the
    ``window - 1`` tokens before it. Equals the last ``t`` rows of full attention over the
    whole sequence with a sliding-window mask, while storing only ``window`` tokens.

    Parameters
    ----------
    x_new : ndarray, shape (t, d)
    w_q, w_k, w_v, w_o : ndarray
        As for :func:`mha_kit.multi_head_attention`; ``w_k`` gives ``cache.num_kv_heads`` heads.
    num_heads : int
    cache : RollingKVCache
        Modified in place.

    Returns
    -------
    out : ndarray, shape (t, d)
    weights : ndarray, shape (h, t, min(seen, W) + t), over the held tokens then the new ones
    """
    if not isinstance(cache, RollingKVCache):
        raise ValueError(f"expected a RollingKVCache, got {type(cache).__name__}")
    x_new = _as_tokens(x_new, "x_new")
    w_q, w_k, w_v, w_o = (np.asarray(w) for w in (w_q, w_k, w_v, w_o))
    h, h_kv, _ = _head_dims(x_new, w_q, w_k, w_v, w_o, num_heads, cache.num_kv_heads)
    k_new, v_new = split_heads(x_new @ w_k, h_kv), split_heads(x_new @ w_v, h_kv)  # (h_kv, t, d_h)
    keys = np.concatenate([cache.keys, k_new], axis=-2)  # (h_kv, held + t, d_h)
    values = np.concatenate([cache.values, v_new], axis=-2)
    q = split_heads(x_new @ w_q, h)  # (t, d) @ (d, h*d_h) -> (h, t, d_h)
    mask = sliding_window_mask(x_new.shape[-2], cache.window, keys.shape[-2])  # (t, held + t)
    heads, weights = grouped_attention(q, keys, values, mask)  # (h, t, d_h), (h, t, held + t)
    cache.append(k_new, v_new)
    return merge_heads(heads) @ w_o, weights


# --- 8-bit cache with one scale per key-value head ---------------------------------------------

def quantize_per_head(x):
    """Symmetric 8-bit quantization of a cache with one scale per key-value head.

    ``scale[j] = max |x[j]| / 127`` and ``q = round(x / scale)``, so every element is off by at
    most ``scale[j] / 2`` after :func:`dequantize_per_head`. A head of zeros gets scale 1. The
    int8 case of :func:`mha_kit.quantize_kv_codes` with ``axis="head"``, which also offers FP8,
    int4 and scales per token or per channel (chapter "Low-precision KV cache").

    Parameters
    ----------
    x : ndarray, shape (h_kv, s, d_h)
        Keys or values of one layer.

    Returns
    -------
    q : ndarray of int8, shape (h_kv, s, d_h)
    scale : ndarray of float64, shape (h_kv,)
    """
    x = np.asarray(x)
    if x.ndim != 3 or x.size == 0:
        raise ValueError(f"expected a cache of shape (h_kv, s, d_h) with at least one token, got {x.shape}")
    q, scale = quantize_kv_codes(x, "int8", axis="head")  # scale (h_kv, 1, 1)
    return q, scale.reshape(x.shape[0])


def dequantize_per_head(q, scale):
    """``q * scale`` per head: ``(h_kv, s, d_h)`` int8 and ``(h_kv,)`` back to float64."""
    q, scale = np.asarray(q), np.asarray(scale, dtype=np.float64)
    if q.ndim != 3 or scale.shape != (q.shape[0],):
        raise ValueError(f"expected q of shape (h_kv, s, d_h) and scale of shape (h_kv,), "
                         f"got {q.shape} and {scale.shape}")
    return q * scale[:, None, None]


def quantized_cache_bytes(num_elements, num_scales, scale_fmt="fp32") -> int:
    """Bytes of an 8-bit cache: one byte per element plus the scales.

    ``num_elements`` cached numbers (keys and values) and ``num_scales`` scales (one per
    key-value head, per key and value, per layer).
    """
    from .units import elements_to_bytes

    for name, n in (("num_elements", num_elements), ("num_scales", num_scales)):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    return elements_to_bytes(num_elements, "int8") + elements_to_bytes(num_scales, scale_fmt)
