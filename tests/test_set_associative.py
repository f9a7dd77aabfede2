"""mha_kit.set_associative against Patterson and Hennessy's worked example, hand-counted traces, and the
equivalences that must hold: one way is direct-mapped, one set is fully associative (no conflict misses)."""
import numpy as np
import pytest

import mha_kit as mk

# Computer Organization and Design (5th ed.), sec. 5.4, "Misses and Associativity in Caches": three caches
# of four one-word blocks, block addresses 0, 8, 0, 6, 8, LRU. Direct-mapped 5 misses, two-way 4, fully
# associative 3. A word is 4 bytes, so the byte addresses are 4x the block addresses.
PH_BLOCKS = [0, 8, 0, 6, 8]
PH_BYTES = [4 * b for b in PH_BLOCKS]


@pytest.mark.parametrize("ways, misses, hits", [
    (1, 5, 0),  # 0 and 8 both map to block 0 (mod 4) and evict each other
    (2, 4, 1),  # all three map to set 0 (mod 2); the second 0 hits, 6 evicts 8 (LRU), 8 evicts 0
    (4, 3, 2),  # fully associative: only the three first touches miss
])
def test_patterson_hennessy_misses_and_associativity(ways, misses, hits):
    got = mk.classify_misses(PH_BYTES, cache_bytes=16, line_bytes=4, ways=ways)
    assert (got.misses, got.hits, got.accesses) == (misses, hits, 5)
    assert got.compulsory == 3 and got.capacity == 0  # the three blocks fit in four
    assert got.conflict == misses - 3


def test_lru_hits_step_by_step_two_way():
    # sets = 2: set 0 gets 0, 8, 0, 6, 8; the hit is the third access only
    assert mk.lru_hits(PH_BLOCKS, sets=2, ways=2).tolist() == [False, False, True, False, False]


def test_index_and_tag_by_hand():
    # 64-byte lines, 64 sets: byte 4096 * r lies in line 64 r, set 0, for every row r
    lines = mk.line_numbers([0, 4096, 8192, 4160], 64)
    assert lines.tolist() == [0, 64, 128, 65]
    assert (lines % 64).tolist() == [0, 0, 0, 1]
    assert mk.num_sets(32 * 1024, 64, 8) == 64


def test_power_of_two_stride_fits_but_thrashes_and_padding_cures_it():
    # 64 rows of a row-major fp64 matrix, 512 columns (4096-byte rows), walked column by column for
    # 8 columns (one 64-byte line per row); a 32 KiB 8-way cache of 64-byte lines has 64 sets.
    def walk(row_bytes):
        return [r * row_bytes + 8 * c for c in range(8) for r in range(64)]
    tight = mk.classify_misses(walk(4096), cache_bytes=32 * 1024, line_bytes=64, ways=8)
    padded = mk.classify_misses(walk(4096 + 64), cache_bytes=32 * 1024, line_bytes=64, ways=8)
    assert tight == mk.CacheMisses(accesses=512, hits=0, compulsory=64, capacity=0, conflict=448)
    assert padded == mk.CacheMisses(accesses=512, hits=448, compulsory=64, capacity=0, conflict=0)


def test_a_cyclic_stream_larger_than_an_lru_cache_never_hits():
    lines = np.tile(np.arange(9), 3)  # nine lines, three passes, eight lines of cache
    got = mk.classify_misses(lines * 64, cache_bytes=8 * 64, line_bytes=64, ways=8)
    assert got == mk.CacheMisses(accesses=27, hits=0, compulsory=9, capacity=18, conflict=0)
    fits = mk.classify_misses(lines[:16] % 8 * 64, cache_bytes=8 * 64, line_bytes=64, ways=8)
    assert (fits.hits, fits.misses) == (8, 8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_set_is_fully_associative_and_counts_add_up(seed):
    rng = np.random.default_rng(seed)
    addresses = rng.integers(0, 64 * 40, size=300)  # 40 distinct lines of 64 bytes, random order
    full = mk.classify_misses(addresses, cache_bytes=16 * 64, line_bytes=64, ways=16)
    assert full.conflict == 0  # nothing to conflict with: any line may go anywhere
    for ways in (1, 2, 4, 8, 16):
        got = mk.classify_misses(addresses, cache_bytes=16 * 64, line_bytes=64, ways=ways)
        assert got.hits + got.misses == got.accesses == 300
        assert got.compulsory == full.compulsory == len(np.unique(addresses // 64))


def test_errors_state_the_rule_and_the_values():
    with pytest.raises(ValueError, match=r"cache_bytes \(100\) must be a multiple of line_bytes \(64\)"):
        mk.num_sets(100, 64, 1)
    with pytest.raises(ValueError, match=r"the cache's 6 lines must divide into sets of ways \(4\) lines"):
        mk.num_sets(6 * 64, 64, 4)
    with pytest.raises(ValueError, match="ways must be a positive integer"):
        mk.classify_misses([0], cache_bytes=64, line_bytes=64, ways=0)
    with pytest.raises(ValueError, match="non-negative integer byte addresses"):
        mk.line_numbers([0, -4], 4)
    with pytest.raises(ValueError, match="non-negative integer byte addresses"):
        mk.line_numbers([0.5], 4)
