"""mha_kit.kernels: tiles, loop orders and split-K work items, counted against their definitions."""
import pytest

import mha_kit as mk
from mha_kit import kernels


def _tiles_by_brute_force(n, s, block_q, block_k):
    """(full, masked, skipped) from the causal mask itself, one tile at a time."""
    mask = mk.causal_mask(n, s)
    full = masked = skipped = 0
    for i in range(0, n, block_q):
        for j in range(0, s, block_k):
            tile = mask[i:i + block_q, j:j + block_k]
            full += bool(tile.all())
            skipped += bool(not tile.any())
            masked += bool(tile.any() and not tile.all())
    return full, masked, skipped


@pytest.mark.parametrize("n, s, block_q, block_k", [
    (8, 8, 2, 2),  # square tiles on the diagonal
    (10, 10, 4, 4),  # ragged last blocks
    (8, 8, 4, 2),  # tall tiles: two diagonal key blocks per query block
    (8, 8, 2, 4),  # wide tiles
    (5, 12, 2, 3),  # queries are the last 5 of 12 positions (a chunk of prefill after a cache)
    (1, 9, 1, 4),  # a decode step: nothing is skipped
])
def test_causal_tiles_match_the_mask(n, s, block_q, block_k):
    counts = kernels.causal_tiles(n, block_q, block_k, s)
    assert (counts.full, counts.masked, counts.skipped) == _tiles_by_brute_force(n, s, block_q, block_k)
    assert counts.total == -(-n // block_q) * -(-s // block_k)


def test_square_tiles_skip_the_upper_triangle():
    # T = n / B blocks a side: T(T - 1)/2 skipped, T on the diagonal masked, T(T - 1)/2 full.
    counts = kernels.causal_tiles(1024, 128, 128)
    assert counts == kernels.TileCounts(full=28, masked=8, skipped=28)
    assert counts.computed == 36


def test_causal_tiles_errors():
    with pytest.raises(ValueError, match=r"^s \(4\) must be at least n \(8\)"):
        kernels.causal_tiles(8, 2, 2, s=4)
    with pytest.raises(ValueError, match=r"^block_q must be a positive integer"):
        kernels.causal_tiles(8, 0, 2)


@pytest.mark.parametrize("n, d, m", [(8192, 128, 98_304), (1024, 64, 98_304), (100, 16, 4096)])
def test_kv_outer_is_flashattention_algorithm_1(n, d, m):
    _, b_c = mk.flash_block_sizes(d, m)
    assert kernels.flash_loop_io(n, d, block_q=1, block_k=b_c, order="kv_outer").total == mk.flash_attention_io(n, d, m)


def test_q_outer_reads_q_once_and_writes_o_once():
    io = kernels.flash_loop_io(1000, 64, block_q=128, block_k=64, order="q_outer")
    assert io == kernels.LoopIO(q=64_000, kv=8 * 2 * 64_000, o=64_000, stats=1000)  # T_r = ceil(1000 / 128) = 8
    fa1 = kernels.flash_loop_io(1000, 64, block_q=128, block_k=64, order="kv_outer")  # T_c = 16
    assert fa1.o == 64_000 + 2 * 16 * 64_000 and fa1.q == 16 * 64_000


def test_loop_order_must_be_known():
    with pytest.raises(ValueError, match=r"^order must be one of \('kv_outer', 'q_outer'\), got 'rows'$"):
        kernels.flash_loop_io(8, 4, 2, 2, "rows")


def test_decode_work_items_and_wave_efficiency():
    assert kernels.decode_work_items(1, 8) == 8
    assert kernels.decode_work_items(64, 8, num_splits=2) == 1024
    assert kernels.wave_efficiency(8, 132) == 8 / 132
    assert kernels.wave_efficiency(264, 132) == 1.0  # two full waves
    assert kernels.wave_efficiency(133, 132) == 133 / 264  # one item spills into a second wave


@pytest.mark.parametrize("items, slots, blocks, expected", [
    (48, 108, 64, 2),  # the example in flash_api.cpp: 2 splits (0.89) rather than 3 (0.67)
    (100, 108, 64, 1),  # 100 >= 0.8 * 108: the slots are nearly full already
    (8, 264, 64, 32),  # batch 1, 8 KV heads, an H100's 2 x 132 slots: 32 splits fill 256 of 264 (97%)
    (8, 264, 4, 4),  # a short context: no more splits than key blocks
])
def test_split_kv_heuristic(items, slots, blocks, expected):
    assert kernels.split_kv_heuristic(items, slots, blocks) == expected


def test_split_kv_heuristic_skips_splits_that_repeat_a_partition():
    # 64 key blocks: 11 splits of ceil(64/11) = 6 blocks and 12 splits of ceil(64/12) = 6 are the same partition.
    chosen = {kernels.split_kv_heuristic(items, 2 * 132, 64) for items in range(1, 200)}
    assert 12 not in chosen


def test_flash_decoding_bytes():
    cfg = mk.PRESETS["llama-3-8b"]
    one = kernels.flash_decoding_bytes(1, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, 8192, num_splits=1)
    assert one.kv == 2 * 8 * 8192 * 128 * 2 and one.partials == 0  # one layer, bf16
    assert one.kv == mk.kv_cache_bytes_per_token(cfg) * 8192 // cfg.num_layers
    split = kernels.flash_decoding_bytes(1, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, 8192, num_splits=16)
    assert split.partials == 2 * 16 * 32 * 129 * 4  # written and read back, fp32
    assert split.partial_share == split.partials / (split.kv + split.partials)
    assert split.partial_share == 528384 / (33554432 + 528384)  # 1.6% of the step's traffic
