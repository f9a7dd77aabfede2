"""Section flash_decoding-fa3-splits of "FlashAttention-2 and Flash-Decoding".

FlashAttention-3's decode split rule (hopper/heuristics.h num_splits_heuristic and hopper/flash_api.cpp
get_num_splits, flash-attention commit 0251105) restated here from the source, with its constants (80% of the
SMs, the four-key-block guard, 85% of the best wave efficiency, at most 128 splits) and the tiles of
hopper/tile_size.h, against a one-wave sequence-aware rule; compared with the table and the values the chapter
stored. Not through mk.wave_efficiency or mk.decode_work_items.
"""
import math

import pytest
import chapter_outputs

SMS = 132  # H100 SXM, one CTA per SM in FlashAttention-3
CASES = {  # (h_kv, query heads per KV head, kBlockM, kBlockN)
    "GQA h_kv=8 (Llama 3 8B), paged": (8, 32 // 8, 128, 128),  # head dim 128, paged non-TMA: 128 x 128
    "MLA h_kv=1 (DeepSeek-V3)": (1, 128, 64, 64),  # head dim 64, V head dim 512: 64 x 64
}
GRID = [(name, b, s) for name in CASES for b in (1, 8) for s in (512, 4096, 32768, 131072)]


def eff(ctas):
    waves = ctas / SMS
    return waves / math.ceil(waves)


def fa3(tiles, blocks):
    if tiles >= 0.8 * SMS:
        return 1
    if blocks <= 4:
        return 1
    cap = min(128, SMS, blocks)
    best = max(eff(tiles * k) for k in range(1, cap + 1))
    return next(k for k in range(1, cap + 1) if eff(tiles * k) >= 0.85 * best)


def case(name, b, s):
    h_kv, g, m, n = CASES[name]
    tiles = b * h_kv * -(-g // m)
    blocks = -(-s // n)
    return tiles, blocks, fa3(tiles, blocks), max(1, min(SMS // tiles, blocks))


def pct(x):
    return f"{100 * x:.1f}%"


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("flash_decoding")


@pytest.mark.parametrize("name,b,s", GRID)
def test_table_rows(nb, name, b, s):
    tiles, blocks, k, fill = case(name, b, s)
    row = (f"{name:<31}{b:>3}{s:>8}{blocks:>8} | {k:>10}{tiles * k:>6}{pct(eff(tiles * k)):>7} | "
           f"{fill:>11}{tiles * fill:>6}{pct(eff(tiles * fill)):>7}")
    assert row in chapter_outputs.printed(nb, "def fa3_num_splits").splitlines()


def test_guard_case_glued(nb):
    tiles, blocks, k, fill = case("GQA h_kv=8 (Llama 3 8B), paged", 1, 512)
    assert (tiles, blocks, k, fill) == (8, 4, 1, 4)  # the paper's "as few as 8 CTAs"
    g = lambda key: chapter_outputs.glued(nb, key)  # noqa: E731
    assert g("fd3_sms") == "132"
    assert g("fd3_gqa512_blocks") == "4"
    assert g("fd3_gqa512_ctas") == "8"
    assert g("fd3_gqa512_busy") == pct(8 / 132)
    assert g("fd3_gqa512_fill") == "4"
    assert g("fd3_gqa512_fill_ctas") == "32"
    assert g("fd3_gqa512_fill_busy") == pct(32 / 132)
    assert 1 - 8 / 132 > 0.9  # "over 90% of the SMs idle"


def test_other_glued(nb):
    g = lambda key: chapter_outputs.glued(nb, key)  # noqa: E731
    tiles, blocks, k, _ = case("MLA h_kv=1 (DeepSeek-V3)", 1, 512)
    assert (g("fd3_mla_tiles"), g("fd3_mla512_blocks"), g("fd3_mla512_fa3")) == (str(tiles), str(blocks), str(k))
    assert g("fd3_mla512_busy") == pct(eff(tiles * k))
    tiles, _, k, fill = case("GQA h_kv=8 (Llama 3 8B), paged", 1, 4096)
    assert (g("fd3_gqa4k_fa3"), g("fd3_gqa4k_fill")) == (str(k), str(fill))
    assert g("fd3_gqa4k_busy") == pct(eff(tiles * k)) and g("fd3_gqa4k_fill_busy") == pct(eff(tiles * fill))
    tiles, _, k, fill = case("GQA h_kv=8 (Llama 3 8B), paged", 8, 512)
    assert g("fd3_gqa512_b8_ctas") == str(tiles * k)
    assert g("fd3_gqa512_b8_busy") == pct(eff(tiles * k))
    assert g("fd3_gqa512_b8_fill_busy") == pct(eff(tiles * fill))


def test_long_context_gap_is_small():
    """The text: on the fixed-length call, past the guard FA3 stays within a few points of one wave."""
    for name, b, s in GRID:
        tiles, blocks, k, fill = case(name, b, s)
        if blocks > 4 and s >= 4096:
            assert eff(tiles * fill) - eff(tiles * k) < 0.15


def fa3_varlen(name, b, s):
    """flash_api.cpp:468 (static count at batch 1) then flash_prepare_scheduler.cu:156-158 (10% margin)."""
    h_kv, g, m, n = CASES[name]
    m_blocks, blocks = -(-g // m), -(-s // n)
    upper = fa3(h_kv * m_blocks, blocks)
    if upper == 1:
        return 1
    per_sm = math.ceil(b * m_blocks * blocks * 1.1 * h_kv / SMS)
    return max(1, min(-(-blocks // per_sm), upper))


@pytest.mark.parametrize("name,b,s", GRID)
def test_varlen_rows(nb, name, b, s):
    tiles, _, k_static, _ = case(name, b, s)
    k = fa3_varlen(name, b, s)
    row = f"{name:<31}{b:>3}{s:>8} | {k_static:>6}{k:>11}{tiles * k:>6}{pct(eff(tiles * k)):>7}"
    assert row in chapter_outputs.printed(nb, "def fa3_num_splits_varlen").splitlines()


def test_varlen_glued(nb):
    g = lambda key: chapter_outputs.glued(nb, key)  # noqa: E731
    gqa, mla = CASES
    assert (fa3_varlen(gqa, 1, 4096), fa3_varlen(mla, 1, 4096), fa3_varlen(mla, 8, 512)) == (11, 32, 4)  # the review
    for key, c in (("gqa4k", (gqa, 1, 4096)), ("mla4k", (mla, 1, 4096)), ("mla512b8", (mla, 8, 512))):
        tiles, k = case(*c)[0], fa3_varlen(*c)
        assert g(f"fd3v_{key}_splits") == str(k) and g(f"fd3v_{key}_busy") == pct(eff(tiles * k))
    tiles, _, k, _ = case(mla, 1, 4096)
    assert g("fd3_mla4k_fa3") == str(k) and g("fd3_mla4k_busy") == pct(eff(tiles * k))
    assert eff(tiles * k) - eff(tiles * fa3_varlen(mla, 1, 4096)) > 0.3  # "not always a few points"
    # guard rows and >= 32K rows agree on both paths
    for name, b, s in GRID:
        if s >= 32768 or -(-s // CASES[name][3]) <= 4:
            assert fa3_varlen(name, b, s) == case(name, b, s)[2]
