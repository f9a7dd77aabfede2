"""Claims of serving_kv_cache's sections on paged kernels, the per-layer cache and fitting the cache,
recomputed from the models' shapes with the products written out."""
import numpy as np
import pytest

import mha_kit as mk

LLAMA3_8B_BYTES_PER_TOKEN = 32 * 2 * 8 * 128 * 2  # layers x (K and V) x KV heads x d_h x bf16 bytes


def test_bytes_per_token_of_llama3_8b():
    assert mk.kv_cache_bytes_per_token(mk.get_preset("llama-3-8b")) == LLAMA3_8B_BYTES_PER_TOKEN


@pytest.mark.parametrize("block, kib", [(16, 960), (128, 8128)])
def test_half_a_block_wasted_per_sequence(block, kib):
    # on average the last block is half empty: (block - 1) / 2 token slots
    assert LLAMA3_8B_BYTES_PER_TOKEN * (block - 1) / 2 == kib * 1024


def test_concatenation_copies_about_n_over_2_times_the_preallocated_traffic():
    n = 2 ** 12
    concat = sum(LLAMA3_8B_BYTES_PER_TOKEN * t for t in range(1, n + 1))  # step t copies t tokens
    assert concat // (LLAMA3_8B_BYTES_PER_TOKEN * n) == (n + 1) // 2 == 2048


@pytest.mark.parametrize("n_ctx, gib_mha, gib_gqa, gib_fp8", [(32_768, 16, 4, 2), (131_072, 64, 16, 8)])
def test_four_ways_table(n_ctx, gib_mha, gib_gqa, gib_fp8):
    cfg = mk.get_preset("llama-3-8b")
    assert mk.kv_cache_bytes(cfg.with_kv_heads(32), n_ctx) == 32 * 2 * 32 * 128 * 2 * n_ctx == gib_mha * 2 ** 30
    assert mk.kv_cache_bytes(cfg, n_ctx) == gib_gqa * 2 ** 30
    assert mk.kv_cache_bytes(cfg, n_ctx, fmt="fp8") == 32 * 2 * 8 * 128 * 1 * n_ctx == gib_fp8 * 2 ** 30


def test_slot_of_the_next_token_follows_the_block_table():
    pool = mk.BlockPool(num_blocks=8, block_size=4, num_kv_heads=1, head_dim=2)
    a, b = mk.PagedKVCache(pool), mk.PagedKVCache(pool)
    for t_a, t_b in [(3, 2), (3, 1)]:  # interleaved growth
        a.append(np.zeros((1, t_a, 2)), np.zeros((1, t_a, 2)))
        b.append(np.zeros((1, t_b, 2)), np.zeros((1, t_b, 2)))
    assert a.block_table == [0, 2] and b.block_table == [1]
    assert a.block_table[6 // 4] * 4 + 6 % 4 == 10  # token 6 of sequence a: block 2, slot 2
    assert b.block_table[3 // 4] * 4 + 3 % 4 == 7  # token 3 of sequence b: block 1, slot 3


def test_rope_position_offset_bug_is_caught_by_the_full_pass_comparison():
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 6, 8)) for _ in range(3))
    full, _ = mk.rotary_attention(q, k, v, np.arange(6), mask=mk.causal_mask(6))
    right, _ = mk.rotary_attention(q[:, 5:6], k, v, [5], np.arange(6))
    wrong, _ = mk.rotary_attention(q[:, 5:6], k, v, [0], np.arange(6))
    assert np.allclose(right[:, 0], full[:, 5])
    assert not np.allclose(wrong[:, 0], full[:, 5])


def test_what_else_a_128k_context_needs():
    """serving_kv_cache-fitting: Llama 3 8B (d_ff 14,336, vocabulary 128,256), one step of 128K tokens or of 8K."""
    assert 2 * 131_072 * 14_336 * 2 == 7 * 2**30  # gate and up outputs, bf16: 7 GiB
    assert 131_072 * 128_256 * 4 / 2**30 == 62.625  # fp32 logits at every position
    assert 2 * 8_192 * 14_336 * 2 == 448 * 2**20  # a chunk of 8K: 448 MiB


def test_long_tail_of_conversations_50_tokens_and_1_percent_at_10k():
    """serving_kv_cache-long-tail: 990 requests of 50 tokens and 10 of 10,000, blocks of 16."""
    used = 990 * 50 + 10 * 10_000
    reserved = 1000 * 10_000
    paged = 990 * 4 * 16 + 10 * 625 * 16  # 50 tokens take 4 blocks; 10,000 take exactly 625
    assert (used, reserved, paged) == (149_500, 10_000_000, 163_360)
    assert f"{100 * used / reserved:.1f}%" == "1.5%" and f"{100 * used / paged:.1f}%" == "91.5%"
    assert f"{100 * 100_000 / paged:.1f}%" == "61.2%" and round(reserved / paged) == 61
    slots = mk.cache_slots([50] * 990 + [10_000] * 10, 10_000, 16)
    assert (slots.used, slots.reserved, slots.paged) == (used, reserved, paged)


def test_block_manager_listing_is_the_code_of_mha_kit():
    """serving_kv_cache-paging: every line of the book's listing occurs in mha_kit/serving.py."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    source = {line.strip() for line in (root / "mha_kit" / "serving.py").read_text().splitlines()}
    cells = json.loads((root / "book" / "serving_kv_cache.ipynb").read_text())["cells"]
    text = next("".join(c["source"]) for c in cells if "The block manager in code" in "".join(c["source"]))
    listing = text.split("```python\n", 1)[1].split("```", 1)[0].splitlines()
    code = [line.strip() for line in listing if line.strip() and line.strip() != "..."]
    assert len(code) > 40
    assert [line for line in code if line not in source] == []
