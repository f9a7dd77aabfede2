"""Prefix caching across requests: hashed full blocks (vLLM) against a radix tree (SGLang).

A finished request leaves its keys and values behind; a later request that starts with the same
tokens can reuse them instead of computing its prefill again. Two designs decide what "the same"
means and what is thrown away first when the memory is full:

* :class:`PrefixBlockCache`, vLLM's automatic prefix caching: the cache is cut into blocks of
  ``block_size`` tokens, each **full** block is named by a hash of its tokens and of its parent's
  hash (so of the whole prefix before it), a request reuses the longest run of leading blocks whose
  hashes are cached, and the least recently used free block is evicted first. A partly filled last
  block is never shared: its tokens are computed again.
* :class:`RadixPrefixCache`, SGLang's RadixAttention: the token sequences live in a radix tree,
  a request reuses the longest common prefix token by token, and the least recently used **leaf**
  is evicted first, so a shared prefix outlives the branches below it.

Both count tokens only (no keys or values are stored): a request is ``match`` (how many of its
prompt tokens are reused) then ``insert`` (the tokens it ran through the model are kept once it
finishes); ``serve`` does both. A finished request's last output token is not among them: it was
sampled from the last step's logits and never run through the model, so it has no keys or values
(:func:`computed_tokens`). Recency is a counter, never the clock, so every run gives the same numbers.
:func:`route_requests` replays a stream over several replicas, each with its own cache.

Book: chapter "Prefix caching in depth".
"""
from __future__ import annotations

import hashlib
import numbers
from collections import OrderedDict

import numpy as np

from .config import check_positive_int


def _check_tokens(tokens):
    """``tokens`` as a tuple of non-negative Python ints, at least one."""
    arr = None if isinstance(tokens, (str, bytes)) else np.asarray(tokens)
    if arr is None or arr.ndim != 1:
        raise ValueError(f"tokens must be a 1-D sequence of token ids, got {type(tokens).__name__} "
                         f"of shape {np.shape(tokens)}")
    if arr.size == 0:
        raise ValueError("tokens must hold at least one token id, got none")
    mixed_bools = not isinstance(tokens, np.ndarray) and bool in set(map(type, tokens))  # [1, True] -> int64
    if arr.dtype.kind not in "iu" or (arr < 0).any() or mixed_bools:
        bad = next(t for t in tokens if isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0)
        raise ValueError(f"token ids must be non-negative integers, got {bad!r}")
    return tuple(arr.tolist())


def computed_tokens(prompt, output=()):
    """The tokens of a finished request that have keys and values: the prompt and all output tokens but the last.

    The last output token was sampled from the logits of the step before and never run through
    the model. vLLM caches the full blocks of a request's computed tokens only (``allocate_slots``
    caps the tokens it caches at ``request.num_tokens``, and ``cache_blocks`` hashes full blocks of
    them); SGLang's ``cache_finished_req`` inserts ``(origin_input_ids + output_ids)[:-1]``. A
    request with no output listed keeps its whole prompt.

    Parameters
    ----------
    prompt, output : sequence of int
        Token ids.

    Returns
    -------
    tuple of int, length ``len(prompt) + max(len(output) - 1, 0)``

    Book: chapter "Prefix caching in depth".
    """
    return _check_tokens(prompt) + tuple(output)[:-1]


def _reusable(matched, num_tokens):
    """At most ``num_tokens - 1`` tokens are reused: the last prompt token is always run again.

    Its forward pass gives the logits of the first output token, which the cache does not hold
    (vLLM ``get_computed_blocks``: "we must recompute the last token to obtain logits"; SGLang caps
    its match at ``input_len - 1`` likewise).
    """
    return min(matched, num_tokens - 1)


# --- vLLM: hashed full blocks, LRU over free blocks --------------------------------------------

class PrefixBlockCache:
    """vLLM-style automatic prefix caching over at most ``capacity_blocks`` cached blocks.

    Block ``i`` of a sequence (tokens ``i*B .. i*B + B - 1``, ``B = block_size``) is cached under
    ``hash(hash of block i-1, its B tokens)``: equal hashes mean equal prefixes, so a block is
    reused only after the same prefix. Only full blocks get a hash. The blocks form one LRU
    queue; :meth:`insert` puts a finished request's blocks at the recent end in reverse order,
    so its deepest block is evicted first and its first block last (vLLM frees a request's blocks
    in reverse for the same reason: a later block hashes more tokens and is less likely to be
    reused).

    Parameters
    ----------
    block_size : int
        Tokens per block ``B`` (vLLM's ``--block-size``).
    capacity_blocks : int
        Cached blocks the memory holds; the least recently used is evicted beyond it.
    chained : bool
        ``True`` (vLLM): a block's hash covers its parent's. ``False`` hashes each block's own tokens
        alone, to show what the chain prevents: a block matched at the wrong place, after another prefix.

    Book: chapter "Prefix caching in depth".
    """

    def __init__(self, block_size, capacity_blocks, chained=True):
        self.block_size = check_positive_int("block_size", block_size)
        self.capacity_blocks = check_positive_int("capacity_blocks", capacity_blocks)
        self.chained = bool(chained)
        self._lru = OrderedDict()  # block hash -> None, least recently used first
        self.evicted = 0  # blocks evicted so far

    def __len__(self):
        """Blocks cached now."""
        return len(self._lru)

    @property
    def cached_tokens(self) -> int:
        """Tokens whose keys and values the cache holds: ``len(self) * block_size``."""
        return len(self._lru) * self.block_size

    def block_hashes(self, tokens, salt=None):
        """Chained hashes of the full blocks of ``tokens``, first block first (a partial block has none).

        ``salt`` (a string, vLLM's per-request ``cache_salt``) enters the first block's hash only,
        as an extra key beside its tokens; the chain carries it into every later block, so requests
        with different salts share no block (vLLM ``generate_block_hash_extra_keys``).
        """
        tokens, size = _check_tokens(tokens), self.block_size
        if salt is not None and (not isinstance(salt, str) or not salt):
            raise ValueError(f"salt must be a non-empty string or None, got {salt!r}")
        ids = np.asarray(tokens[:len(tokens) // size * size], dtype="<i8")  # (full blocks * size,), converted once
        hashes, parent = [], b""
        for start in range(0, len(tokens) - size + 1, size):
            block = ids[start:start + size].tobytes()
            extra = salt.encode() if (salt and start == 0) else b""  # the salt: first block only
            parent = hashlib.sha256((parent if self.chained else b"") + block + extra).digest()
            hashes.append(parent)
        return hashes

    def match(self, tokens, salt=None) -> int:
        """Prompt tokens reused from the cache: whole leading blocks, at most ``len(tokens) - 1``.

        A lookup only; the cache is not changed. ``salt`` as in :meth:`block_hashes`.
        """
        tokens = _check_tokens(tokens)
        hits = 0
        for h in self.block_hashes(tokens, salt):
            if h not in self._lru:
                break  # the chain stops at the first missing block
            hits += 1
        usable = _reusable(hits * self.block_size, len(tokens)) // self.block_size  # whole blocks only
        return usable * self.block_size

    def insert(self, tokens, salt=None):
        """Keep the full blocks of ``tokens`` (a finished request's :func:`computed_tokens`), evicting LRU blocks."""
        hashes = self.block_hashes(tokens, salt)
        if len(hashes) > self.capacity_blocks:
            raise ValueError(f"a request of {len(hashes)} full blocks does not fit in capacity_blocks "
                             f"({self.capacity_blocks}): its whole cache must be resident while it runs")
        for h in reversed(hashes):  # deepest block first: it becomes the first of them to go
            self._lru[h] = None
            self._lru.move_to_end(h)
        while len(self._lru) > self.capacity_blocks:
            self._lru.popitem(last=False)
            self.evicted += 1

    def serve(self, prompt, output=(), salt=None) -> int:
        """:meth:`match` the prompt, then :meth:`insert` its :func:`computed_tokens`; returns the reused tokens."""
        reused = self.match(prompt, salt)
        self.insert(computed_tokens(prompt, output), salt)
        return reused


# --- SGLang: a radix tree over tokens, LRU over leaves -------------------------------------------

class _Node:
    """One edge of the radix tree: the tokens on it, its children by their first token."""

    __slots__ = ("key", "children", "parent", "last_access", "order")

    def __init__(self, key, parent, last_access, order):
        self.key = key  # tuple of token ids on the edge into this node
        self.children = {}  # first token of the child's key -> child
        self.parent = parent
        self.last_access = last_access  # value of the cache's counter when last on a served path
        self.order = order  # creation number: breaks ties in last_access deterministically


def _common_length(a, b):
    """Length of the common prefix of two token tuples."""
    n = min(len(a), len(b))
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


class RadixPrefixCache:
    """SGLang-style RadixAttention over at most ``capacity_tokens`` cached tokens.

    Every cached sequence is a path from the root; a request reuses its longest common prefix
    with any of them, to the token. Beyond capacity the least recently used leaf is evicted
    whole, and its parent becomes a leaf once its last child is gone: prefixes shared by many
    requests are touched by each and stay (Zheng et al. 2024, sec. 3).

    Parameters
    ----------
    capacity_tokens : int
        Tokens the memory holds (SGLang's pool counts tokens: its default page is one token).

    Book: chapter "Prefix caching in depth".
    """

    def __init__(self, capacity_tokens):
        self.capacity_tokens = check_positive_int("capacity_tokens", capacity_tokens)
        self._clock = 0  # bumped by every insert: the recency of a path
        self._nodes = 0
        self._root = self._new_node((), None)
        self.cached_tokens = 0  # tokens on all edges
        self.evicted = 0  # tokens evicted so far

    def _new_node(self, key, parent):
        self._nodes += 1
        return _Node(key, parent, self._clock, self._nodes)

    def __len__(self):
        """Tokens cached now."""
        return self.cached_tokens

    def match(self, tokens) -> int:
        """Prompt tokens reused: the longest cached prefix, at most ``len(tokens) - 1``. A lookup only."""
        tokens = _check_tokens(tokens)
        node, i = self._root, 0
        while i < len(tokens) and tokens[i] in node.children:
            child = node.children[tokens[i]]
            common = _common_length(child.key, tokens[i:])
            i += common
            if common < len(child.key):
                break  # the request leaves this edge part-way
            node = child
        return _reusable(i, len(tokens))

    def insert(self, tokens):
        """Keep ``tokens`` (a finished request's :func:`computed_tokens`), evicting LRU leaves beyond capacity."""
        tokens = _check_tokens(tokens)
        if len(tokens) > self.capacity_tokens:
            raise ValueError(f"a request of {len(tokens)} tokens does not fit in capacity_tokens "
                             f"({self.capacity_tokens}): its whole cache must be resident while it runs")
        self._clock += 1
        node, i = self._root, 0
        while i < len(tokens):
            child = node.children.get(tokens[i])
            if child is None:  # a new branch for the rest of the request
                child = node.children[tokens[i]] = self._new_node(tokens[i:], node)
                self.cached_tokens += len(tokens) - i
            common = _common_length(child.key, tokens[i:])
            if common < len(child.key):
                child = self._split(child, common)
            child.last_access = self._clock
            node, i = child, i + common
        self._evict()

    def _split(self, child, at):
        """Cut ``child``'s edge after ``at`` tokens; returns the new node that holds the first part."""
        parent = child.parent
        mid = self._new_node(child.key[:at], parent)
        mid.last_access = child.last_access
        parent.children[child.key[0]] = mid
        child.key, child.parent = child.key[at:], mid
        mid.children[child.key[0]] = child
        return mid

    def _evict(self):
        """Drop least recently used leaves, whole, until the tokens fit."""
        while self.cached_tokens > self.capacity_tokens:
            leaves = [n for n in self._walk() if not n.children]
            leaf = min(leaves, key=lambda n: (n.last_access, n.order))
            del leaf.parent.children[leaf.key[0]]
            self.cached_tokens -= len(leaf.key)
            self.evicted += len(leaf.key)

    def _walk(self):
        """Every node but the root."""
        stack = list(self._root.children.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            yield node

    def serve(self, prompt, output=()) -> int:
        """:meth:`match` the prompt, then :meth:`insert` its :func:`computed_tokens`; returns the reused tokens."""
        reused = self.match(prompt)
        self.insert(computed_tokens(prompt, output))
        return reused


def serve_stream(cache, requests):
    """Serve ``(prompt, output)`` requests in order through one cache; the reused tokens of each.

    The prefix-cache hit rate of the stream is ``sum(reused) / sum(len(prompt))`` (vLLM's
    prefix-cache metric counts hit tokens over queried prompt tokens the same way).

    Book: chapter "Prefix caching in depth".
    """
    if not isinstance(cache, (PrefixBlockCache, RadixPrefixCache)):
        raise ValueError(f"expected a PrefixBlockCache or RadixPrefixCache, got {type(cache).__name__}")
    return [cache.serve(prompt, output) for prompt, output in requests]


def hit_rates_by_capacity(requests, capacities_tokens, block_size):
    """Share of prompt tokens a stream reuses, for caches of each capacity: hashed blocks and radix tree.

    For each capacity ``C`` tokens the stream is served through a fresh :class:`PrefixBlockCache` of
    ``C // block_size`` blocks and a fresh :class:`RadixPrefixCache` of ``C`` tokens
    (:func:`serve_stream`); the rate is reused prompt tokens over prompt tokens.

    Returns
    -------
    dict
        ``capacity -> (blocks_rate, radix_rate)``, floats in ``[0, 1)``.

    Book: chapter "Prefix caching in depth".
    """
    size = check_positive_int("block_size", block_size)
    prompts = sum(len(_check_tokens(prompt)) for prompt, _ in requests)
    if not prompts:
        raise ValueError("requests must hold at least one request, got none")
    rates = {}
    for c in capacities_tokens:
        c = check_positive_int("capacity", c)
        by_blocks = sum(serve_stream(PrefixBlockCache(size, max(1, c // size)), requests))
        by_tree = sum(serve_stream(RadixPrefixCache(c), requests))
        rates[c] = (by_blocks / prompts, by_tree / prompts)
    return rates



def hash_collision_probability(num_items, hash_bits):
    """Chance that some two of ``num_items`` values of a uniform ``hash_bits``-bit hash are equal.

    The birthday bound: with ``N = 2**hash_bits`` equally likely values, ``n`` items avoid every
    collision with probability ``prod_{i<n} (1 - i/N) ~ exp(-n (n - 1) / (2 N))``, so the chance of
    at least one collision is ``1 - exp(-n (n - 1) / 2**(hash_bits + 1))`` (Menezes, van Oorschot
    and Vanstone, *Handbook of Applied Cryptography*, 1996, §2.1.5). It is about
    ``n**2 / 2**(hash_bits + 1)`` while small, and 1/2 near ``n = 1.18 * 2**(hash_bits / 2)``.

    Parameters
    ----------
    num_items : int
        Values hashed, ``n >= 1`` (cached blocks, for a prefix cache).
    hash_bits : int
        Bits of the hash, ``>= 1`` (64 for xxh64, 256 for SHA-256).

    Returns
    -------
    float
        The probability, in ``[0, 1]``; tiny values keep their relative precision (``expm1``).

    Book: chapter "Prefix caching in depth".
    """
    n = check_positive_int("num_items", num_items)
    bits = check_positive_int("hash_bits", hash_bits)
    return float(-np.expm1(-(n * (n - 1) / 2) / 2.0 ** bits))

# --- Several replicas: where to send a request -------------------------------------------------

ROUTING_POLICIES = ("round_robin", "cache_aware")


def route_requests(requests, caches, policy="cache_aware", max_imbalance=None):
    """Send each request to one replica (each with its own prefix cache) and serve it there.

    Parameters
    ----------
    requests : sequence of (prompt, output)
        Token-id sequences, in arrival order; each is served to completion before the next.
    caches : sequence of PrefixBlockCache or RadixPrefixCache
        One per replica; modified in place.
    policy : {"round_robin", "cache_aware"}
        ``"round_robin"``: replica ``i % len(caches)``. ``"cache_aware"``: the replica whose cache
        matches the most prompt tokens; ties go to the one that has taken fewer requests, then to
        the lower index.
    max_imbalance : int, optional
        For ``"cache_aware"``: a replica that has taken more than ``max_imbalance`` requests beyond
        the least loaded one is passed over (a router falls back to balancing load when replicas
        drift apart). ``None``: never.

    Returns
    -------
    list of (replica, reused_tokens)

    Book: chapter "Prefix caching in depth".
    """
    if policy not in ROUTING_POLICIES:
        raise ValueError(f"policy must be one of {ROUTING_POLICIES}, got {policy!r}")
    caches = list(caches)
    if not caches:
        raise ValueError("caches must hold at least one replica's cache, got none")
    if max_imbalance is not None and (isinstance(max_imbalance, bool) or not isinstance(max_imbalance, numbers.Integral)
                                      or max_imbalance < 0):
        raise ValueError(f"max_imbalance must be a non-negative integer or None, got {max_imbalance!r}")
    load, routed = [0] * len(caches), []
    for i, (prompt, output) in enumerate(requests):
        if policy == "round_robin":
            replica = i % len(caches)
        else:
            allowed = [r for r in range(len(caches)) if max_imbalance is None or load[r] - min(load) <= max_imbalance]
            replica = max(allowed, key=lambda r: (caches[r].match(prompt), -load[r], -r))
        routed.append((replica, caches[replica].serve(prompt, output)))
        load[replica] += 1
    return routed
