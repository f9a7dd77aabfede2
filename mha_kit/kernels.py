"""What attention kernels schedule: tiles, loop orders and the work items of a split-K decode.

FlashAttention cuts the ``n x s`` scores into tiles of ``block_q`` queries by ``block_k`` keys.
This module counts what a kernel does with those tiles, without running one:

* :func:`causal_tiles`: under a causal mask, which tiles are computed whole, which need an
  element-wise mask (the diagonal), and which are skipped because every pair in them is masked;
* :func:`flash_loop_io`: the elements one head moves between HBM and SRAM with the key blocks in
  the outer loop (FlashAttention, Dao et al. 2022, Algorithm 1) or the query blocks outer
  (FlashAttention-2, Dao 2023, Algorithm 1);
* :func:`decode_work_items`, :func:`wave_efficiency`, :func:`split_kv_heuristic` and
  :func:`flash_decoding_bytes`: why a decode step at batch 1 needs its keys split across the GPU
  (Flash-Decoding, Dao et al. 2023), and what the split costs in extra traffic.

Sizes are in elements unless a name says bytes. Book: chapter "FlashAttention-2 and Flash-Decoding".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import check_positive_int
from .units import elements_to_bytes

#: Loop orders :func:`flash_loop_io` counts: key blocks outer (FlashAttention), query blocks outer (FlashAttention-2).
LOOP_ORDERS = ("kv_outer", "q_outer")


@dataclass(frozen=True)
class TileCounts:
    """Tiles of a causal attention, by what the kernel does with them."""

    full: int  # every (query, key) pair allowed: computed with no mask
    masked: int  # some pairs allowed: computed, then masked element by element (the diagonal)
    skipped: int  # no pair allowed: never loaded, never computed

    @property
    def computed(self) -> int:
        """Tiles the kernel computes: ``full + masked``."""
        return self.full + self.masked

    @property
    def total(self) -> int:
        """All tiles of the ``n x s`` grid."""
        return self.full + self.masked + self.skipped


def _tile_edges(n, s, block_q, block_k):
    """Per query block its first and last query position; per key block its first and last key."""
    q_start = np.arange(0, n, block_q)
    q_first = s - n + q_start  # queries are the last n of s positions
    q_last = s - n + np.minimum(q_start + block_q, n) - 1
    k_first = np.arange(0, s, block_k)
    k_last = np.minimum(k_first + block_k, s) - 1
    return q_first[:, None], q_last[:, None], k_first[None, :], k_last[None, :]


def causal_tiles(n, block_q, block_k, s=None) -> TileCounts:
    """Count the tiles a causal kernel computes in full, masks, and skips.

    Query ``i`` (at position ``s - n + i``, as in :func:`mha_kit.causal_mask`) may attend to
    keys ``0 .. s - n + i``. A tile is skipped when its first key comes after its last query,
    and needs no mask when its last key comes no later than its first query.

    Parameters
    ----------
    n : int
        Queries (rows).
    block_q, block_k : int
        Queries and keys per tile; the last block of each may be shorter.
    s : int, optional
        Keys (columns), at least ``n``; ``n`` by default (prefill of a whole sequence).

    Returns
    -------
    TileCounts

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    n, b_q, b_k = (check_positive_int(k, v) for k, v in (("n", n), ("block_q", block_q), ("block_k", block_k)))
    s = n if s is None else check_positive_int("s", s)
    if s < n:
        raise ValueError(f"s ({s}) must be at least n ({n}): the queries are the last n of s positions")
    q_first, q_last, k_first, k_last = _tile_edges(n, s, b_q, b_k)
    skipped = k_first > q_last  # (T_r, T_c)
    full = k_last <= q_first
    return TileCounts(full=int(full.sum()), masked=int((~skipped & ~full).sum()), skipped=int(skipped.sum()))


@dataclass(frozen=True)
class LoopIO:
    """Elements one attention head reads from and writes to HBM, by tensor."""

    q: int  # reads of Q
    kv: int  # reads of K and V
    o: int  # reads and writes of O (and its initialisation)
    stats: int  # reads and writes of the row statistics (m and l, or the log-sum-exp L)

    @property
    def total(self) -> int:
        """All elements moved."""
        return self.q + self.kv + self.o + self.stats


def flash_loop_io(n, d, block_q, block_k, order) -> LoopIO:
    """HBM traffic of one head's forward pass for a loop order, ``n`` queries and keys, head size ``d``.

    ``"kv_outer"`` (FlashAttention's Algorithm 1): O, l, m are initialised in HBM; each of the
    ``T_c = ceil(n / block_k)`` key blocks is loaded once, and for each of them every block of
    Q, O, l and m is read and O, l, m written back. The total equals
    :func:`mha_kit.flash_attention_io` when ``block_k`` is its ``B_c``.

    ``"q_outer"`` (FlashAttention-2's Algorithm 1): each of the ``T_r = ceil(n / block_q)`` query
    blocks is loaded once, streams every block of K and V, keeps its O, l, m on chip, and writes
    O once with one log-sum-exp per row.

    Returns
    -------
    LoopIO

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    n, d = check_positive_int("n", n), check_positive_int("d", d)
    b_q, b_k = check_positive_int("block_q", block_q), check_positive_int("block_k", block_k)
    if order not in LOOP_ORDERS:
        raise ValueError(f"order must be one of {LOOP_ORDERS}, got {order!r}")
    if order == "kv_outer":
        t_c = -(-n // b_k)
        return LoopIO(q=t_c * n * d, kv=2 * n * d, o=n * d + 2 * t_c * n * d, stats=2 * n + 4 * t_c * n)
    t_r = -(-n // b_q)
    return LoopIO(q=n * d, kv=2 * t_r * n * d, o=n * d, stats=n)


def decode_work_items(batch_size, num_kv_heads, num_splits=1) -> int:
    """Independent tiles of one decode step: one per sequence, KV head and split of the keys.

    With the ``g = h / h_kv`` query heads of a KV head packed as the rows of one tile (what
    FlashAttention-2 does for a single-token query with GQA), a step has
    ``batch_size * num_kv_heads * num_splits`` work items, each run by one thread block.

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    b, h_kv = check_positive_int("batch_size", batch_size), check_positive_int("num_kv_heads", num_kv_heads)
    return b * h_kv * check_positive_int("num_splits", num_splits)


def wave_efficiency(work_items, num_slots) -> float:
    """Share of the GPU's slots busy, averaged over the waves a launch of ``work_items`` takes.

    ``num_slots`` thread blocks run at once (the SMs times the blocks each can hold); a launch
    runs in ``ceil(work_items / num_slots)`` waves, so the share is
    ``work_items / (ceil(work_items / num_slots) * num_slots)``: 1.0 when the items fill every wave.

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    items, slots = check_positive_int("work_items", work_items), check_positive_int("num_slots", num_slots)
    return items / (-(-items // slots) * slots)


def split_kv_heuristic(work_items, num_slots, num_key_blocks, max_splits=128) -> int:
    """The number of key splits FlashAttention-2 picks for a decode step (``num_splits_heuristic``).

    The rule of ``csrc/flash_attn/flash_api.cpp``, restated: with at least 80% of the slots
    already busy, do not split. Otherwise, among split counts up to
    ``min(max_splits, num_slots, num_key_blocks)`` that change the blocks per split, find the best
    :func:`wave_efficiency` of ``work_items * splits`` and return the smallest count reaching 85%
    of it (more splits mean more partial results written and read back).

    Parameters
    ----------
    work_items : int
        Tiles without splitting (:func:`decode_work_items` with one split).
    num_slots : int
        Thread blocks that run at once; FlashAttention-2 passes twice the SM count.
    num_key_blocks : int
        Blocks of keys in the context (``ceil(s / block_k)``).

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    items, slots = check_positive_int("work_items", work_items), check_positive_int("num_slots", num_slots)
    blocks, cap = check_positive_int("num_key_blocks", num_key_blocks), check_positive_int("max_splits", max_splits)
    if items >= 0.8 * slots:
        return 1
    per_split = [None] + [-(-blocks // k) for k in range(1, min(cap, slots, blocks) + 1)]  # blocks per split
    eligible = [k for k in range(1, len(per_split)) if k == 1 or per_split[k] != per_split[k - 1]]
    efficiency = {k: wave_efficiency(items * k, slots) for k in eligible}
    best = max(efficiency.values())
    return next(k for k in eligible if efficiency[k] >= 0.85 * best)


@dataclass(frozen=True)
class DecodeBytes:
    """HBM bytes of one decode step's attention, cache against the split partials."""

    kv: int  # keys and values of the cache, read once
    partials: int  # fp32 partial outputs and log-sum-exps, written by the splits and read by the merge

    @property
    def partial_share(self) -> float:
        """``partials / (kv + partials)``: the traffic splitting adds, as a share of the step's."""
        return self.partials / (self.kv + self.partials)


def flash_decoding_bytes(batch_size, num_heads, num_kv_heads, head_dim, context_len, num_splits,
                         fmt="bf16") -> DecodeBytes:
    """Bytes a split-K decode step moves: the cache once, plus the partial results when split.

    Each of ``num_splits`` splits writes, per sequence and query head, ``head_dim`` output
    numbers and one log-sum-exp in fp32 (FlashAttention-2's ``out_accum`` and
    ``softmax_lse_accum``); the merge reads them back. One split writes the output directly.

    Book: chapter "FlashAttention-2 and Flash-Decoding".
    """
    b, h, h_kv = (check_positive_int(k, v) for k, v in (("batch_size", batch_size), ("num_heads", num_heads),
                                                        ("num_kv_heads", num_kv_heads)))
    d_h, s = check_positive_int("head_dim", head_dim), check_positive_int("context_len", context_len)
    splits = check_positive_int("num_splits", num_splits)
    kv = elements_to_bytes(2 * b * h_kv * s * d_h, fmt)
    partials = 0 if splits == 1 else 2 * elements_to_bytes(splits * b * h * (d_h + 1), "fp32")
    return DecodeBytes(kv=kv, partials=partials)
