"""The numbers chapter "Tree attention, shared prefixes and inexact caches" states, recomputed."""
import pytest

import mha_kit as mk


def test_cascade_bytes_and_intensity():
    # Llama 3 8B: 32 layers, 8 KV heads of 128, bf16; 32 query heads
    per_token_8b = 32 * 2 * 8 * 128 * 2
    assert per_token_8b * 4096 == 512 * 2**20  # read once
    assert 64 * per_token_8b * 4096 == 32 * 2**30  # read per sequence
    flops = 4 * 64 * 32 * 4096 * 128 * 32
    assert flops / (64 * 4096 * per_token_8b) == 4  # the group size
    assert flops / (4096 * per_token_8b) == 256
    # Llama 3 70B: 80 layers, 8 KV heads, 64 query heads: g = 8
    per_token_70b = 80 * 2 * 8 * 128 * 2
    flops_70b = 4 * 64 * 64 * 4096 * 128 * 80
    assert flops_70b / (4096 * per_token_70b) == 512
    assert mk.shared_prefix_read_bytes(mk.PRESETS["llama-3-70b"], 4096, 64) == (64 * 4096 * per_token_70b, 4096 * per_token_70b)
    assert 256 < mk.GPUS["h100-sxm"].ridge_point < 512  # 8B stays below the ridge, 70B passes it


def test_acceptance_lengths():
    a, b = 0.7, 0.2
    chain = 1 + sum(a**i for i in range(1, 7))
    assert f"{chain:.2f}" == "3.06"
    # tree [-1, -1, 0, 0, 2, 4]: nodes 0 (a), 1 (b), 2 (a*a), 3 (a*b), 4 (a*a*a), 5 (a*a*a*a)
    tree = 1 + a + b + a * a + a * b + a**3 + a**4
    assert mk.tree_expected_length([-1, -1, 0, 0, 2, 4], [a, b, a, b, a, a]) == pytest.approx(tree)
    assert f"{tree:.2f}" == "3.11"


def test_cross_layer_and_yoco_bytes():
    per_layer = 2 * 8 * 128 * 2
    assert 32 * per_layer == 128 * 1024 and 16 * per_layer == 64 * 1024
    yoco = (16 * 1024 + 131072) * per_layer
    assert yoco == 576 * 2**20
    assert round(32 * 131072 * per_layer / yoco, 1) == 28.4


def test_eviction_bytes():
    cfg = mk.PRESETS["llama-3-8b"]
    assert mk.kv_cache_bytes(cfg, 32768) == 32768 * 32 * 2 * 8 * 128 * 2 == 4 * 2**30
    assert mk.kv_cache_bytes(cfg, 4096) == 512 * 2**20


def test_snapkv_window_share_of_the_score_matrix():
    """tree_attention-inexact-caches: a 32-query observation window against a 32K prompt."""
    assert 32_768 // 32 == 1024 and 131_072 // 32 == 4096 and 8_192 // 32 == 256
