"""Section kv_cache_basics-lmdeploy-fraction of "The KV cache from zero": LMDeploy's cache_max_entry_count.

Recomputed from the rule as LMDeploy's code states it, not through the chapter's lmdeploy_pool: from v0.2.2
BlockManager::GetBlockCount returns free * ratio / block_size, the free memory read after the weights load
(0.8 by default); in v0.2.0-0.2.1 it was total * ratio (0.5). The InternLM tutorial's round figures: 7B x 2
bytes of bf16 weights, a quarter of that for W4A16, 1 GB of other memory; tokens counted in 64-token blocks of
a 32-layer, 8-KV-head, head-128 shape (block.h: 4-bit data plus a 16-bit scale and zero per head and token).
"""
from fractions import Fraction as F
from pathlib import Path

import chapter_outputs

GB = 10**9
L, KV, HD, BLOCK = 32, 8, 128, 64
BF16_TOKEN = 2 * L * KV * HD * 2  # K and V, 2 bytes a number
INT4_TOKEN = 2 * L * KV * (HD * 4 // 8 + 2 * 16 // 8)  # token_data_size + token_param_size, per K or V head
WEIGHTS = {"bf16": 14 * GB, "W4A16": 3_500_000_000}
OTHER = 1 * GB


NB = chapter_outputs.notebook("kv_cache_basics")


def glued(key):
    return chapter_outputs.glued(NB, key)


def gb(x):
    return f"{x / 1e9:.1f} GB"


def pool_bytes(card, weights, ratio=F(4, 5)):
    return int(ratio * (card - weights))  # free after the weights x ratio, exact integer bytes


def tokens(pool, token_bytes):
    return (pool // (BLOCK * token_bytes)) * BLOCK


def test_constants():
    assert BF16_TOKEN == 131_072 and INT4_TOKEN == 34_816
    assert 3.7 < BF16_TOKEN / INT4_TOKEN < 3.8  # less than 4x: the scale and zero point
    assert glued("kb_lmd_int4_token") == f"{INT4_TOKEN // 1024} KiB" and INT4_TOKEN % 1024 == 0
    text = " ".join(chapter_outputs.section(NB, "kv_cache_basics-lmdeploy-fraction",
                                            end="kv_cache_basics-npu-memory").split())
    assert (f"{{glue:text}}`kb_lmd_int4_token` a token instead of {BF16_TOKEN // 1024} KiB, "
            f"about {BF16_TOKEN / INT4_TOKEN:.1f} times the tokens fit") in text
    assert "That is less than 4 times" in text


def test_table_against_tutorial():
    expected = {  # (format, card GB): (pool, total, tokens); the tutorial read 23 and 36 GB for bf16
        ("bf16", 24): ("8.0 GB", "23.0 GB", 60_992),
        ("bf16", 40): ("20.8 GB", "35.8 GB", 158_656),
        ("W4A16", 24): ("16.4 GB", "20.9 GB", 125_120),
        ("W4A16", 40): ("29.2 GB", "33.7 GB", 222_720),
    }
    for (fmt, card), (pool_s, total_s, toks) in expected.items():
        pool = pool_bytes(card * GB, WEIGHTS[fmt])
        assert gb(pool) == pool_s == glued(f"kb_lmd_pool_{fmt}_{card}")
        assert gb(WEIGHTS[fmt] + pool + OTHER) == total_s == glued(f"kb_lmd_total_{fmt}_{card}")
        assert tokens(pool, BF16_TOKEN) == toks
        assert glued(f"kb_lmd_tokens_{fmt}_{card}") == f"{toks:,}"


def test_w4a16_saves_a_fifth_and_total_tracks_card():
    totals = {(f, c): WEIGHTS[f] + pool_bytes(c * GB, WEIGHTS[f]) for f in WEIGHTS for c in (24, 40)}
    drop = totals["bf16", 24] - totals["W4A16", 24]
    assert drop == F(1, 5) * (WEIGHTS["bf16"] - WEIGHTS["W4A16"])  # (1 - r) x freed weights, exact bytes
    assert glued("kb_lmd_saved") == gb(drop) == "2.1 GB" and glued("kb_lmd_freed") == "10.5 GB"
    assert totals["bf16", 40] - totals["bf16", 24] == F(4, 5) * 16 * GB  # r x extra card, exact bytes
    # the v0.2.0-0.2.1 rule, 0.5 of the total, would not fit the bf16 model on 24 GB
    assert 0.5 * 24 * GB + WEIGHTS["bf16"] > 24 * GB


def test_all_combined_and_text():
    pool = pool_bytes(24 * GB, WEIGHTS["W4A16"], ratio=F(2, 5))
    assert glued("kb_lmd_all_pool") == gb(pool) == "8.2 GB"  # the tutorial's 20.5 x 0.4 (its box says 16.4)
    assert glued("kb_lmd_all_tokens") == f"{tokens(pool, INT4_TOKEN):,}" == "235,520"
    assert glued("kb_lmd_int4_token") == "34 KiB"
    printed = chapter_outputs.printed(NB, "def lmdeploy_pool(")
    assert f"{tokens(pool, BF16_TOKEN):,} if the cache were bf16" in printed
    text = chapter_outputs.section(NB, "kv_cache_basics-lmdeploy-fraction", end="kv_cache_basics-npu-memory")
    for needle in ("cache_max_entry_count", "GetBlockCount", "v0.2.2", "TOTAL", "FREE", "gpu_memory_utilization",
                   "TensorRT-LLM", "quant_policy", "0.2 GB"):
        assert needle in text, needle
    bib = (Path(__file__).resolve().parent.parent / "references.bib").read_text(encoding="utf-8")
    for key in ("lmdeploycachemaxentry", "interntutoriallmdeploy"):
        assert f"{{{key}," in bib and f"{key}{{" in text
    assert "e96e2b4" in bib and "a129a14" in bib  # v0.2.1 and v0.5.3, the two rules
    # a block count (>= 1) is accepted only from v0.10.0 (commit 63553a882); v0.5.3 asserts 0 < x < 1
    assert "v0.10.0" in text and "`0 < cache_max_entry_count < 1`" in text and "63553a882" in bib
    assert "a number of blocks, not a share" not in text
    assert '"four times"' in text and "studio-smi" in text and "§1.1, §2.2.1 and §2.2.3" in text
