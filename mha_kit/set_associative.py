"""A set-associative cache with LRU replacement, and its misses split into compulsory, capacity and conflict.

A byte address ``a`` lies in line ``a // line_bytes``. The line may live only in set ``line % num_sets`` (the
index bits of the address); that set has ``ways`` slots, and each slot keeps the rest of the line number (the
tag) to say which line it holds. ``ways == 1`` is a direct-mapped cache, ``num_sets == 1`` a fully
associative one; every size in between is "``ways``-way set-associative". A miss in the set-associative cache
is *compulsory* if the line was never touched before, a *capacity* miss if a fully associative LRU cache of
the same size misses too, and a *conflict* miss if that cache would have hit (Patterson and Hennessy's "three
Cs"). The three add up to the misses exactly, because each access is classified on its own.

>>> import mha_kit as mk
>>> mk.classify_misses([0, 32, 0, 24, 32], cache_bytes=16, line_bytes=4, ways=1)  # block addresses 0, 8, 0, 6, 8
CacheMisses(accesses=5, hits=0, compulsory=3, capacity=0, conflict=2)

Book: chapter "Attention kernels on the GPU", section "Set-associative caches, and what L2 can and cannot do
for an LLM".
"""
from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from .config import check_positive_int


class CacheMisses(NamedTuple):
    """Accesses, hits, and the misses of a set-associative LRU cache by cause (all counts)."""

    accesses: int
    hits: int
    compulsory: int  # first touch of the line
    capacity: int  # a fully associative LRU cache of the same size misses as well
    conflict: int  # a fully associative LRU cache of the same size would have hit

    @property
    def misses(self) -> int:
        """Every access that was not a hit."""
        return self.compulsory + self.capacity + self.conflict


def num_sets(cache_bytes, line_bytes, ways) -> int:
    """Sets of a cache of ``cache_bytes`` in lines of ``line_bytes``, ``ways`` lines a set.

    Raises ``ValueError`` unless the cache holds a whole number of lines and the lines divide into sets.
    """
    cache_bytes, line_bytes, ways = (check_positive_int(name, value) for name, value in
                                     (("cache_bytes", cache_bytes), ("line_bytes", line_bytes), ("ways", ways)))
    if cache_bytes % line_bytes:
        raise ValueError(f"cache_bytes ({cache_bytes}) must be a multiple of line_bytes ({line_bytes})")
    lines = cache_bytes // line_bytes
    if lines % ways:
        raise ValueError(f"the cache's {lines} lines must divide into sets of ways ({ways}) lines")
    return lines // ways


def line_numbers(addresses, line_bytes) -> np.ndarray:
    """Line number of each byte address, ``address // line_bytes``; shape ``(n,)``, int64."""
    line_bytes = check_positive_int("line_bytes", line_bytes)
    addresses = np.asarray(addresses)
    if addresses.ndim != 1 or not np.issubdtype(addresses.dtype, np.integer) or (addresses < 0).any():
        raise ValueError(f"expected a 1-D array of non-negative integer byte addresses, got {addresses!r}")
    return addresses.astype(np.int64) // line_bytes


def lru_hits(lines, sets, ways) -> np.ndarray:
    """Hit (True) or miss of each access to a cache of ``sets`` sets of ``ways`` LRU-replaced lines.

    ``lines`` are line numbers in access order; line ``l`` goes to set ``l % sets`` with tag ``l // sets``.
    Each set is an ordered dict of tags, least recently used first. Returns a bool array, shape ``(n,)``.
    """
    sets, ways = check_positive_int("sets", sets), check_positive_int("ways", ways)
    table = [OrderedDict() for _ in range(sets)]
    hits = np.zeros(len(lines), dtype=bool)
    for i, line in enumerate(int(x) for x in lines):
        ways_of_set, tag = table[line % sets], line // sets  # index bits pick the set, the rest is the tag
        if tag in ways_of_set:
            ways_of_set.move_to_end(tag)  # now the most recently used
            hits[i] = True
        else:
            if len(ways_of_set) == ways:
                ways_of_set.popitem(last=False)  # evict the least recently used
            ways_of_set[tag] = None
    return hits


def classify_misses(addresses, *, cache_bytes, line_bytes, ways) -> CacheMisses:
    """Run the byte ``addresses`` through a ``ways``-way LRU cache and count its misses by cause.

    Parameters
    ----------
    addresses : array_like of int, shape (n,)
        Byte addresses in access order.
    cache_bytes, line_bytes, ways : int
        Capacity and line size in bytes, and lines per set (1: direct-mapped; all lines: fully associative).

    Returns
    -------
    CacheMisses
        ``compulsory`` first touches, ``capacity`` misses a fully associative LRU cache of the same size also
        takes, ``conflict`` misses it would have avoided; ``hits + misses == accesses``.
    """
    lines = line_numbers(addresses, line_bytes)
    sets = num_sets(cache_bytes, line_bytes, ways)
    hit = lru_hits(lines, sets, ways)
    hit_full = lru_hits(lines, 1, sets * ways)  # the same capacity, any line anywhere
    _, first_index = np.unique(lines, return_index=True)
    first = np.zeros(len(lines), dtype=bool)
    first[first_index] = True  # the first touch of each line
    miss = ~hit
    return CacheMisses(accesses=len(lines), hits=int(hit.sum()), compulsory=int((miss & first).sum()),
                       capacity=int((miss & ~first & ~hit_full).sum()),
                       conflict=int((miss & ~first & hit_full).sum()))
