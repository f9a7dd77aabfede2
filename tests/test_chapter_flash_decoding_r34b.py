"""Section flash_decoding-varlen-gqa-only of "FlashAttention-2 and Flash-Decoding".

FlashAttention-2's decode launch restated from csrc/flash_attn/flash_api.cpp at commit 0251105 (the
seqlenq_ngroups_swapped branch of mha_varlen_fwd is the only varlen caller of set_params_splitkv;
num_splits_heuristic: no split at 80% of 2 * SMs, else the fewest eligible splits within 85% of the best wave
efficiency, at most min(128, slots, key blocks); key blocks of 128 for head dim 128), here without mha_kit, and
compared with the table and the values the chapter stored. Issue 1029 of the repository gives 77 us and 24 us.
"""
import math

import pytest
import chapter_outputs

SMS, SLOTS = 132, 264  # H100 SXM; FlashAttention-2 passes num_sm * 2 to the heuristic
H, D, S = 32, 128, 8192  # Llama 3 8B: 32 query heads of 128, release context 8,192
SHAPES = {"MHA h_kv=32": 32, "GQA h_kv=8 (Llama 3 8B)": 8}
BATCHES = (1, 2, 4, 8)


def eff(ctas):
    waves = ctas / SLOTS
    return waves / math.ceil(waves)


def heuristic(tiles, blocks, max_splits=128):
    if tiles >= 0.8 * SLOTS:
        return 1
    cap = min(max_splits, SLOTS, blocks)
    ok = [k for k in range(1, cap + 1) if k == 1 or -(-blocks // k) != -(-blocks // (k - 1))]
    best = max(eff(tiles * k) for k in ok)
    return next(k for k in ok if eff(tiles * k) >= 0.85 * best)


def launch(api, b, h_kv):
    swapped = H > h_kv
    tiles = b * h_kv * math.ceil((H // h_kv) / 64) if swapped else b * H
    if api == "varlen" and not swapped:
        return tiles, 1
    return tiles, heuristic(tiles, math.ceil(S / 128))


def pct(x):
    return f"{100 * x:.1f}%"


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("flash_decoding")


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("b", BATCHES)
def test_table_rows(nb, name, b):
    row = f"{name:<25}{b:>3} |"
    for api, width in (("varlen", 13), ("kvcache", 19)):
        tiles, k = launch(api, b, SHAPES[name])
        row += f" {k:>{width}}{tiles * k:>6}{pct(eff(tiles * k)):>7} |"
    assert row.rstrip(" |") in chapter_outputs.printed(nb, "def fa2_decode_grid").splitlines()


def test_glued(nb):
    g = lambda key: chapter_outputs.glued(nb, key)  # noqa: E731
    cases = {"mha_varlen": ("varlen", 1, 32), "mha_kvcache": ("kvcache", 1, 32), "gqa_varlen": ("varlen", 1, 8),
             "mha_b4_varlen": ("varlen", 4, 32), "mha_b4_kvcache": ("kvcache", 4, 32)}
    for key, (api, b, h_kv) in cases.items():
        tiles, k = launch(api, b, h_kv)
        assert (g(f"fdv_{key}_splits"), g(f"fdv_{key}_ctas"), g(f"fdv_{key}_busy")) == (
            str(k), str(tiles * k), pct(eff(tiles * k)))
    # the exact counts the text rests on, pinned on the chapter's glue
    assert (g("fdv_mha_varlen_splits"), g("fdv_mha_varlen_ctas")) == ("1", "32")  # MHA through varlen: never split
    assert (g("fdv_mha_kvcache_splits"), g("fdv_mha_kvcache_ctas")) == ("7", "224")
    assert (g("fdv_gqa_varlen_splits"), g("fdv_gqa_varlen_ctas")) == ("32", "256")  # GQA swapped: 8 tiles x 32
    # batch 8: no split either way, in the chapter's printed table
    table = chapter_outputs.printed(nb, "def fa2_decode_grid").splitlines()
    assert f"{'MHA h_kv=32':<25}{8:>3} | {1:>13}{256:>6}{'97.0%':>7} | {1:>19}{256:>6}{'97.0%':>7}" in table
    assert g("fdv_blocks") == "64"
    assert g("fdv_blocks_per_split") == str(math.ceil(64 / 7)) == "10"
    assert g("fdv_thread_ratio") == "3.2"  # 77 us / 24 us, issue 1029
    # the heuristic's own cutoff for MHA decode: the first b with b * 32 >= 0.8 * 264 = 211.2 (batch 7, 224 tiles)
    first = next(b for b in range(1, 65) if launch("kvcache", b, 32)[1] == 1)
    assert first == 7 and launch("kvcache", 6, 32)[1] > 1  # batches 5-6 would still split
    assert (g("fdv_nosplit_batch"), g("fdv_nosplit_tiles"), g("fdv_nosplit_cut")) == (
        str(first), str(first * H), f"{0.8 * SLOTS:.1f}")
    assert g("fdv_mha_varlen_idle_sms") == str(SMS - launch("varlen", 1, 32)[0]) == "100"
    assert (g("fdv_slots"), g("fdv_sms")) == (str(SLOTS), str(SMS))
    assert g("fdv_revert_days") == "26"  # b322ae2 (2026-04-16) to 9bad4be (2026-05-12)


def test_section_cites_sources(nb):
    text = chapter_outputs.section(nb, "flash_decoding-varlen-gqa-only", end="flash_decoding-fa3-splits")
    for key in ("flashattnissue1029", "flashattnpr754", "flashattnissue1217", "flashattnpr2550", "flashattnrepo",
                "flashattnpr2448", "flashattnpr2542", "vllmfapr176", "vllmfapr190"):
        assert key in text
    assert "77" in text and "24 µs" in text
    assert "an eighth" not in text and "alone would have been enough" not in text  # round-34 corrections
    assert "total_q == batch_size" in text and "Only apply split-k for decoding" in text
