"""Prefix caching: hashed full blocks (vLLM) against a radix tree (SGLang), on streams counted by hand."""
import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

A = list(range(1, 11))  # 10 tokens: with blocks of 4, two full blocks [1-4] [5-8] and a partial [9, 10]
B = A[:6] + [20, 21, 22, 23, 24]  # shares 6 tokens with A: one full block and half of the second
C = A + [30, 31]  # A and two more tokens: A's partial block is now full, but with other tokens


def serve_all(cache, prompts):
    return [cache.serve(p) for p in prompts]


# ---------------------------------------------------------------------------------------------
# Reuse on a hand-countable stream
# ---------------------------------------------------------------------------------------------

def test_block_vs_radix_reuse_on_a_hand_countable_stream():
    # A: nothing cached. B: blocks reuse [1-4] only (its 2nd block differs), the tree the 6 shared
    # tokens. C: blocks reuse [1-4][5-8] (A's tail [9, 10] never had a hash), the tree all of A.
    # A again: both blocks hit; the tree has all 10 but the last token is always run again.
    assert serve_all(mk.PrefixBlockCache(4, 100), [A, B, C, A]) == [0, 4, 8, 8]
    assert serve_all(mk.RadixPrefixCache(1000), [A, B, C, A]) == [0, 6, 10, 9]


def test_a_partial_block_is_not_shared():
    blocks, tree = mk.PrefixBlockCache(4, 10), mk.RadixPrefixCache(100)
    blocks.insert(A), tree.insert(A)
    assert len(blocks) == 2 and blocks.cached_tokens == 8  # [9, 10] is not cached
    assert len(tree) == 10
    assert blocks.match(A + [99]) == 8 and tree.match(A + [99]) == 10


def test_the_last_prompt_token_is_always_computed():
    # A prompt of exactly two full blocks, all cached: the block cache recomputes the whole last
    # block (hits must be whole blocks below n), the tree only the last token.
    prompt = A[:8]
    blocks, tree = mk.PrefixBlockCache(4, 10), mk.RadixPrefixCache(100)
    blocks.insert(prompt), tree.insert(prompt)
    assert blocks.match(prompt) == 4 and tree.match(prompt) == 7
    assert blocks.match([1]) == 0 and tree.match([1]) == 0  # one token: nothing to reuse


def test_match_is_a_lookup_and_a_different_first_token_matches_nothing():
    blocks, tree = mk.PrefixBlockCache(4, 10), mk.RadixPrefixCache(100)
    assert blocks.match(A) == 0 and tree.match(A) == 0 and len(blocks) == len(tree) == 0
    blocks.insert(A), tree.insert(A)
    shifted = [0] + A  # same tokens one position later: a different prefix everywhere
    assert blocks.match(shifted) == 0 and tree.match(shifted) == 0


def test_output_tokens_are_cached_for_the_next_turn_but_the_last_one():
    turn1, answer = [5, 6, 7], [8, 9, 10, 11, 12]
    turn2 = turn1 + answer + [13, 14]
    blocks, tree = mk.PrefixBlockCache(4, 10), mk.RadixPrefixCache(100)
    assert blocks.serve(turn1, answer) == 0 and tree.serve(turn1, answer) == 0
    # 7 computed tokens (3 prompt + 4 answer; 12 was sampled, never run): one full block, 7 to the token
    assert blocks.serve(turn2) == 4 and tree.serve(turn2) == 7


def test_the_last_sampled_token_has_no_keys_or_values():
    """Issue 36's stream: request 1 (prompt 1..10, output [11, 12]) leaves 11 computed tokens, two full
    blocks of 4; a prompt 1..13 reuses 8 in vLLM (full blocks of computed tokens) and SGLang
    (``(input_ids + output_ids)[:-1]``), not 12."""
    assert mk.computed_tokens(list(range(1, 11)), [11, 12]) == tuple(range(1, 12))
    assert mk.computed_tokens([1, 2], []) == (1, 2)  # no output listed: the prompt ran whole
    blocks = mk.PrefixBlockCache(4, 100)
    blocks.serve(list(range(1, 11)), [11, 12])
    assert len(blocks) == 2
    assert blocks.match(list(range(1, 14))) == 8
    tree = mk.RadixPrefixCache(100)
    tree.serve(list(range(1, 11)), [11, 12])
    assert len(tree) == 11 and tree.match(list(range(1, 14))) == 11


# ---------------------------------------------------------------------------------------------
# Eviction
# ---------------------------------------------------------------------------------------------

def test_block_eviction_is_lru_with_a_request_s_deepest_block_first():
    cache = mk.PrefixBlockCache(2, 3)
    cache.insert([1, 2, 3, 4])  # blocks x0 = [1, 2], x1 = [3, 4]; x1 is the older of the two
    cache.insert([5, 6])  # y0: the cache is full
    cache.insert([7, 8])  # evicts x1
    assert cache.evicted == 1 and len(cache) == 3
    assert cache.match([1, 2, 3, 4, 9]) == 2 and cache.match([5, 6, 9]) == 2
    cache.insert([9, 10])  # evicts x0
    assert cache.match([1, 2, 3, 4, 9]) == 0 and cache.match([5, 6, 9]) == 2 and cache.match([7, 8, 0]) == 2


def test_a_request_touches_its_whole_chain_so_its_first_block_outlives_a_sibling():
    cache = mk.PrefixBlockCache(2, 3)
    cache.insert([1, 2, 3, 4])  # x0, x1
    cache.insert([1, 2, 5, 6])  # touches x0, adds z1: LRU order x1, z1, x0
    cache.insert([7, 8])  # evicts x1
    assert cache.match([1, 2, 3, 4, 0]) == 2 and cache.match([1, 2, 5, 6, 0]) == 4


def test_radix_evicts_lru_leaves_and_keeps_a_shared_prefix():
    cache = mk.RadixPrefixCache(10)
    cache.insert([1, 2, 3, 4, 5, 6])  # P
    cache.insert([1, 2, 3, 7, 8])  # Q splits P's edge: [1, 2, 3] -> {[4, 5, 6], [7, 8]}
    assert len(cache) == 8
    cache.insert([9, 9, 9])  # 11 tokens: the oldest leaf [4, 5, 6] goes
    assert len(cache) == 8 and cache.evicted == 3
    assert cache.match([1, 2, 3, 4, 5, 6]) == 3 and cache.match([1, 2, 3, 7, 8]) == 4
    cache.insert([5, 5, 5, 5, 5])  # 13 tokens: [7, 8] goes, then [1, 2, 3], now a leaf, too
    assert len(cache) == 8 and cache.evicted == 8
    assert cache.match([1, 2, 3, 7, 8]) == 0 and cache.match([9, 9, 9, 1]) == 3


streams = st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=12), min_size=1, max_size=12)


@settings(max_examples=30, deadline=None)
@given(prompts=streams, block_size=st.integers(1, 4), capacity=st.integers(12, 30))
def test_capacity_is_never_exceeded_and_the_newest_request_survives(prompts, block_size, capacity):
    blocks, tree = mk.PrefixBlockCache(block_size, capacity // block_size), mk.RadixPrefixCache(capacity)
    for p in prompts:
        if len(p) // block_size <= capacity // block_size:
            blocks.insert(p)
            assert len(blocks) <= blocks.capacity_blocks
            assert blocks.match(p + [9]) == len(p) // block_size * block_size
        tree.insert(p)
        assert len(tree) <= capacity
        assert tree.match(p + [9]) == len(p)


@settings(max_examples=30, deadline=None)
@given(prompts=streams, block_size=st.integers(1, 5))
def test_without_eviction_blocks_reuse_the_tree_s_match_rounded_down_to_blocks(prompts, block_size):
    # Small alphabet, so the prompts share prefixes of every length.
    blocks, tree = mk.PrefixBlockCache(block_size, 10_000), mk.RadixPrefixCache(10_000)
    for p in prompts:
        by_tree = tree.serve(p)
        assert blocks.serve(p) == by_tree // block_size * block_size


# ---------------------------------------------------------------------------------------------
# A stream and several replicas
# ---------------------------------------------------------------------------------------------

def conversation(k, turns):
    """Requests of conversation k: user turns of 2 tokens, answers of 2, ids 100k + j."""
    history, requests, ids = [], [], iter(range(100 * k, 100 * k + 100))
    for _ in range(turns):
        prompt = history + [next(ids), next(ids)]
        answer = [next(ids), next(ids)]
        requests.append((prompt, answer))
        history = prompt + answer
    return requests


def test_serve_stream_counts_the_reused_tokens_of_each_request():
    # Prompts of 2, 6 and 10 tokens; each turn finds the last turn's computed tokens, its prompt and its
    # answer but the answer's last token: 3 and 7 tokens to the token, whole blocks of them with blocks.
    requests = conversation(0, 3)
    assert mk.serve_stream(mk.RadixPrefixCache(100), requests) == [0, 3, 7]
    assert mk.serve_stream(mk.PrefixBlockCache(4, 100), requests) == [0, 0, 4]
    assert mk.serve_stream(mk.PrefixBlockCache(3, 100), requests) == [0, 3, 6]


def test_hit_rates_by_capacity_on_one_conversation():
    # Prompts of 2, 6 and 10 tokens (18 in all): blocks of 4 reuse 0 + 4, the tree 3 + 7 (above).
    # 12 tokens hold the last turn's 11 computed tokens; 4 tokens, one block, cannot hold its 2 full blocks.
    requests = conversation(0, 3)
    rates = mk.hit_rates_by_capacity(requests, [12, 1000], block_size=4)
    assert rates == {12: (4 / 18, 10 / 18), 1000: (4 / 18, 10 / 18)}
    with pytest.raises(ValueError, match=r"^a request of 2 full blocks does not fit in capacity_blocks \(1\)"):
        mk.hit_rates_by_capacity(requests, [4], block_size=4)


def test_cache_aware_routing_keeps_each_conversation_on_its_replica():
    # 3 conversations, 2 turns each, interleaved, over 2 replicas. Round robin sends every second
    # turn to the replica that did not see the first: nothing is reused. Cache-aware routing
    # sends each first turn to the least loaded replica and each second turn to where its
    # history is: 3 of each 6-token prompt are reused (the first turn's computed tokens).
    c = [conversation(k, 2) for k in range(3)]
    stream = [c[0][0], c[1][0], c[2][0], c[0][1], c[1][1], c[2][1]]
    rr = mk.route_requests(stream, [mk.RadixPrefixCache(100) for _ in range(2)], "round_robin")
    assert rr == [(0, 0), (1, 0), (0, 0), (1, 0), (0, 0), (1, 0)]
    aware = mk.route_requests(stream, [mk.RadixPrefixCache(100) for _ in range(2)], "cache_aware")
    assert aware == [(0, 0), (1, 0), (0, 0), (0, 3), (1, 3), (0, 3)]


def test_max_imbalance_stops_a_shared_prefix_from_piling_everything_on_one_replica():
    stream = [([1, 2, 3, 4, k], ()) for k in range(10, 14)]
    greedy = mk.route_requests(stream, [mk.RadixPrefixCache(100) for _ in range(2)], "cache_aware")
    assert greedy == [(0, 0), (0, 4), (0, 4), (0, 4)]
    balanced = mk.route_requests(stream, [mk.RadixPrefixCache(100) for _ in range(2)], "cache_aware", max_imbalance=1)
    assert balanced == [(0, 0), (0, 4), (1, 0), (1, 4)]


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "tokens, message",
    [
        ([], r"^tokens must hold at least one token id, got none$"),
        ([1, -2], r"^token ids must be non-negative integers, got -2$"),
        ([1, 2.0], r"^token ids must be non-negative integers, got 2.0$"),
        ([True], r"^token ids must be non-negative integers, got True$"),
        ([[1, 2]], r"^tokens must be a 1-D sequence of token ids, got list of shape \(1, 2\)$"),
        ("abc", r"^tokens must be a 1-D sequence of token ids, got str of shape \(\)$"),
    ],
)
def test_bad_tokens(tokens, message):
    for cache in (mk.PrefixBlockCache(4, 4), mk.RadixPrefixCache(16)):
        with pytest.raises(ValueError, match=message):
            cache.match(tokens)
        with pytest.raises(ValueError, match=message):
            cache.insert(tokens)


def test_numpy_token_arrays_are_accepted():
    cache = mk.RadixPrefixCache(16)
    cache.insert(np.arange(1, 9))
    assert cache.match(np.arange(1, 9)) == 7


def test_construction_and_capacity_errors():
    with pytest.raises(ValueError, match=r"^block_size must be a positive integer, got 0"):
        mk.PrefixBlockCache(0, 4)
    with pytest.raises(ValueError, match=r"^capacity_blocks must be a positive integer, got -1"):
        mk.PrefixBlockCache(4, -1)
    with pytest.raises(ValueError, match=r"^capacity_tokens must be a positive integer, got 2.5"):
        mk.RadixPrefixCache(2.5)
    with pytest.raises(ValueError, match=r"^a request of 3 full blocks does not fit in capacity_blocks \(2\)"):
        mk.PrefixBlockCache(4, 2).insert(range(12))
    with pytest.raises(ValueError, match=r"^a request of 12 tokens does not fit in capacity_tokens \(11\)"):
        mk.RadixPrefixCache(11).insert(range(12))


def test_routing_errors():
    stream = [([1, 2], ())]
    with pytest.raises(ValueError, match=r"^policy must be one of \('round_robin', 'cache_aware'\), got 'random'$"):
        mk.route_requests(stream, [mk.RadixPrefixCache(8)], "random")
    with pytest.raises(ValueError, match=r"^caches must hold at least one replica's cache, got none$"):
        mk.route_requests(stream, [])
    with pytest.raises(ValueError, match=r"^max_imbalance must be a non-negative integer or None, got -1$"):
        mk.route_requests(stream, [mk.RadixPrefixCache(8)], max_imbalance=-1)
    with pytest.raises(ValueError, match=r"^expected a PrefixBlockCache or RadixPrefixCache, got dict$"):
        mk.serve_stream({}, stream)


def test_unchained_hashes_match_a_block_after_another_prefix():
    # [1-4][5-8] and [9-12][13-16] cached; a prompt [9-12][5-8][99]: its second block's tokens were cached,
    # but after another prefix. vLLM's chained hash refuses it; hashing each block alone reuses it.
    chained, loose = mk.PrefixBlockCache(4, 10), mk.PrefixBlockCache(4, 10, chained=False)
    for cache in (chained, loose):
        cache.insert(list(range(1, 9)))
        cache.insert(list(range(9, 17)))
    prompt = [9, 10, 11, 12, 5, 6, 7, 8, 99]
    assert chained.match(prompt) == 4
    assert loose.match(prompt) == 8


# --- cache_salt: vLLM puts the salt in the first block's extra keys only --------------------------

def test_salt_enters_the_first_block_hash_beside_its_tokens():
    # vLLM generate_block_hash_extra_keys: cache_salt_keys = [request.cache_salt] if start_token_idx == 0
    cache = mk.PrefixBlockCache(4, 10)
    first = np.asarray([1, 2, 3, 4], dtype="<i8").tobytes()
    assert cache.block_hashes([1, 2, 3, 4], salt="tenant-a")[0] == hashlib.sha256(first + b"tenant-a").digest()
    assert cache.block_hashes([1, 2, 3, 4])[0] == hashlib.sha256(first).digest()


def test_salt_reaches_later_blocks_only_through_the_chain():
    tokens = list(range(1, 9))  # two full blocks
    chained, unchained = mk.PrefixBlockCache(4, 10), mk.PrefixBlockCache(4, 10, chained=False)
    a, b = chained.block_hashes(tokens, salt="a"), chained.block_hashes(tokens, salt="b")
    assert a[0] != b[0] and a[1] != b[1]  # the chain carries the salt
    a, b = unchained.block_hashes(tokens, salt="a"), unchained.block_hashes(tokens, salt="b")
    assert a[0] != b[0] and a[1] == b[1]  # without it the second block would be shared


def test_different_salts_share_nothing_and_the_same_salt_hits():
    prompt = list(range(1, 21))  # 5 full blocks of 4
    cache = mk.PrefixBlockCache(4, 100)
    assert cache.serve(prompt, salt="tenant-a") == 0
    assert cache.match(prompt, salt="tenant-a") == 16  # 19 usable tokens, whole blocks: 4 x 4
    assert cache.match(prompt, salt="tenant-b") == 0
    assert cache.match(prompt) == 0


@pytest.mark.parametrize("salt", ["", 7, b"x"])
def test_salt_must_be_a_non_empty_string(salt):
    with pytest.raises(ValueError, match="salt must be a non-empty string"):
        mk.PrefixBlockCache(4, 10).block_hashes([1, 2, 3, 4], salt=salt)
