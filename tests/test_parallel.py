"""Attention on several GPUs: the cache per GPU under tensor parallelism, ring and all-reduce bytes.

The replication rule is vLLM's ``QKVParallelLinear`` (``vllm/model_executor/layers/linear.py``):
``num_heads = divide(total_num_heads, tp_size)``; when ``tp_size >= total_num_kv_heads`` each rank
holds ``num_kv_heads = 1`` and every key-value head is replicated ``tp_size // total_num_kv_heads``
times, otherwise ``num_kv_heads = divide(total_num_kv_heads, tp_size)``. Expected values are
written out as the products that rule gives, never read back from the code under test.
"""
import pytest

import mha_kit as mk

LLAMA_70B = mk.PRESETS["llama-3-70b"]  # h = 64, h_kv = 8, d_h = 128, 80 layers
LLAMA_8B = mk.PRESETS["llama-3-8b"]  # h = 32, h_kv = 8, d_h = 128, 32 layers
V2 = mk.PRESETS["deepseek-v2"]  # MLA: d_c = 512, d_rope = 64, 60 layers, 128 heads


def _vllm_kv_heads(total_kv, tp):
    """vLLM's rule, transcribed: 1 head per rank from tp >= total_kv on, else an equal share."""
    return 1 if tp >= total_kv else total_kv // tp


@pytest.mark.parametrize("h_kv, tp, expected", [
    (8, 1, 8), (8, 2, 4), (8, 4, 2), (8, 8, 1),  # split
    (8, 16, 1), (8, 32, 1),  # replicated twice, four times
    (1, 8, 1),  # MQA: the one head on every GPU
    (2, 2, 1), (2, 8, 1),
])
def test_kv_heads_per_gpu_follows_vllm(h_kv, tp, expected):
    assert mk.kv_heads_per_gpu(h_kv, tp) == expected == _vllm_kv_heads(h_kv, tp)


@pytest.mark.parametrize("h_kv, tp, rule", [
    (8, 3, "must divide num_kv_heads"),
    (8, 12, "must be a multiple of num_kv_heads"),
    (6, 4, "must divide num_kv_heads"),
])
def test_kv_heads_per_gpu_rejects_uneven_splits(h_kv, tp, rule):
    with pytest.raises(ValueError, match=rf"tp \({tp}\) {rule} \({h_kv}\)"):
        mk.kv_heads_per_gpu(h_kv, tp)


def test_llama_70b_cache_per_gpu_at_8k():
    # 8,192 tokens x 80 layers x 2 (K, V) x h_kv/t heads x 128 x 2 bytes
    assert mk.kv_cache_bytes_per_gpu(LLAMA_70B, 8192, tp=1) == 8192 * 80 * 2 * 8 * 128 * 2
    assert mk.kv_cache_bytes_per_gpu(LLAMA_70B, 8192, tp=2) == 8192 * 80 * 2 * 4 * 128 * 2
    assert mk.kv_cache_bytes_per_gpu(LLAMA_70B, 8192, tp=8) == 8192 * 80 * 2 * 1 * 128 * 2  # 320 MiB


def test_cache_per_gpu_stops_shrinking_beyond_h_kv():
    at_8 = mk.kv_cache_bytes_per_gpu(LLAMA_70B, 4096, tp=8)
    at_16 = mk.kv_cache_bytes_per_gpu(LLAMA_70B, 4096, tp=16)
    at_64 = mk.kv_cache_bytes_per_gpu(LLAMA_70B, 4096, tp=64)
    assert at_8 == at_16 == at_64 == 4096 * 80 * 2 * 128 * 2
    # the whole deployment holds tp / h_kv copies: 16 GPUs store twice the tp = 8 total
    assert 16 * at_16 == 2 * 8 * at_8


def test_cache_per_gpu_times_tp_is_the_whole_cache_while_split():
    for tp in (1, 2, 4, 8):
        assert tp * mk.kv_cache_bytes_per_gpu(LLAMA_8B, 1000, tp, batch_size=3) == mk.kv_cache_bytes(
            LLAMA_8B, 1000, batch_size=3)


def test_mla_latent_is_whole_on_every_rank():
    # (512 + 64) numbers per token per layer, 60 layers, bf16, on every rank whatever tp is
    per_rank = 4096 * 60 * (512 + 64) * 2
    for tp in (1, 2, 8, 16, 128):
        assert mk.kv_cache_bytes_per_gpu(V2, 4096, tp) == per_rank
    assert mk.kv_cache_bytes_per_gpu(V2, 4096, 1) == mk.kv_cache_bytes(V2, 4096)


def test_fp8_halves_the_cache_per_gpu():
    assert 2 * mk.kv_cache_bytes_per_gpu(LLAMA_70B, 8192, 8, fmt="fp8") == mk.kv_cache_bytes_per_gpu(
        LLAMA_70B, 8192, 8)


@pytest.mark.parametrize("cfg, tp", [(LLAMA_70B, 3), (LLAMA_70B, 128), (V2, 3)])
def test_tp_must_divide_the_query_heads(cfg, tp):
    with pytest.raises(ValueError, match=rf"tp \({tp}\) must divide num_heads \({cfg.num_heads}\)"):
        mk.kv_cache_bytes_per_gpu(cfg, 1024, tp)


def test_ring_attention_bytes_llama_70b():
    # 128K tokens over 8 ranks: 16,384 tokens a block, 7 hops, 2 x 8 x 128 numbers per token, bf16
    assert mk.ring_attention_bytes(LLAMA_70B, 131072, 8) == 7 * 16384 * 2 * 8 * 128 * 2
    assert mk.ring_attention_bytes(LLAMA_70B, 131072, 1) == 0  # one rank sends nothing


def test_ring_attention_bytes_mla_sends_the_latent():
    assert mk.ring_attention_bytes(V2, 8192, 4) == 3 * 2048 * (512 + 64) * 2


def test_ring_attention_needs_equal_shares():
    with pytest.raises(ValueError, match=r"context_len \(1000\) must be divisible by cp \(3\)"):
        mk.ring_attention_bytes(LLAMA_70B, 1000, 3)


def test_all_reduce_bytes_ring():
    # one decode token of Llama 3 70B (d = 8192) over 8 GPUs: 2 x 7/8 x 8192 numbers, bf16
    assert mk.all_reduce_bytes_per_gpu(8192, 8) == 2 * 7 * 1024 * 2
    assert mk.all_reduce_bytes_per_gpu(8192, 1) == 0
    with pytest.raises(ValueError, match=r"num_elements \(10\) must be divisible by tp \(4\)"):
        mk.all_reduce_bytes_per_gpu(10, 4)


def test_ring_overlap_min_tokens_by_hand():
    # Llama 3 70B: 2 x 8 x 128 x 2 bytes a token a layer; 4 x 64 x 128 FLOPs a pair
    bytes_per_token, flops_per_pair = 2 * 8 * 128 * 2, 4 * 64 * 128
    expected = -(-bytes_per_token * 989e12 // (flops_per_pair * 450e9))
    assert mk.ring_overlap_min_tokens(LLAMA_70B, 989e12, 450e9) == expected == 275
    assert mk.ring_overlap_min_tokens(LLAMA_70B, 989e12, 50e9) == 2473  # InfiniBand: 9 times the block
    with pytest.raises(ValueError, match=r"link_bytes_per_s must be a positive number, got 0"):
        mk.ring_overlap_min_tokens(LLAMA_70B, 989e12, 0)


def test_causal_pairs_per_rank_sum_to_the_causal_total():
    n = 1024
    for layout in ("contiguous", "zigzag"):
        assert sum(mk.causal_pairs_per_rank(n, 4, layout)) == n * (n + 1) // 2


def test_causal_pairs_contiguous_and_zigzag_by_hand():
    # 8 tokens on 2 ranks. Contiguous: queries 0-3 see 1+2+3+4 keys, queries 4-7 see 5+6+7+8.
    assert mk.causal_pairs_per_rank(8, 2) == [10, 26]
    # Zigzag: 4 chunks of 2; rank 0 takes chunks 0 and 3 (1+2 + 7+8), rank 1 chunks 1 and 2 (3+4 + 5+6)
    assert mk.causal_pairs_per_rank(8, 2, "zigzag") == [18, 18]


def test_causal_pairs_rules():
    with pytest.raises(ValueError, match=r"num_tokens \(10\) must be divisible by 8 chunks \(zigzag, cp = 4\)"):
        mk.causal_pairs_per_rank(10, 4, "zigzag")
    with pytest.raises(ValueError, match=r"layout must be 'contiguous' or 'zigzag', got 'random'"):
        mk.causal_pairs_per_rank(8, 2, "random")
