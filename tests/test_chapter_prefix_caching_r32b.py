"""Sections prefix_caching-declared-vs-automatic and prefix_caching-cascade-break-even of "Prefix caching in depth".

The declared prefix (vLLM <= 0.3: prefix_pos cut to whole blocks, reused when an earlier request declared the
same tokens) against automatic caching (leading full blocks whose chained content matches, the last prompt token
always recomputed, a finished request leaving its prompt and all its output but the last token), recomputed with
plain tuples instead of mk.PrefixBlockCache. The cascade model recomputed from the bytes of one prefix read at the
H100 datasheet's 3.35 TB/s, and the outcome of vLLM's use_cascade_attention on the thread's shapes worked by hand.
"""
import math
import re

import chapter_outputs

NB = chapter_outputs.notebook("prefix_caching")
BS = 4


def _full_blocks(tokens):
    return [tuple(tokens[:i + BS]) for i in range(0, len(tokens) // BS * BS, BS)]  # block i named by its whole prefix


def test_declared_against_automatic():
    s = list(range(1, 11))
    r1, o1 = s + [101, 102, 103, 104, 105, 106], [201, 202, 203, 204, 205]
    r2 = s + [101, 102, 103, 104, 301, 302, 303, 304]
    r3 = r1 + o1 + [401, 402, 403, 404]
    cached, declared, rows = set(), set(), []
    for prompt, output in ((r1, o1), (r2, [0]), (r3, [0])):
        prefix = tuple(prompt[:10 // BS * BS])
        d = len(prefix) if prefix in declared else 0
        declared.add(prefix)
        hits = 0
        for block in _full_blocks(prompt):
            if block not in cached:
                break
            hits += 1
        a = min(hits * BS, len(prompt) - 1) // BS * BS
        cached.update(_full_blocks(prompt + output[:-1]))
        rows.append((len(prompt), d, a))
    assert rows == [(16, 0, 0), (18, 8, 12), (25, 8, 20)]
    out = chapter_outputs.printed(NB, "def declared_reuse")
    got = [tuple(int(x) for x in m) for m in
           re.findall(r"(\d+) prompt tokens \| declared prefix reuses\s+(\d+) \| automatic reuses\s+(\d+)", out)]
    assert got == rows
    glue = chapter_outputs.cell_glue(NB, "def declared_reuse")
    assert (glue["pc_decl_total"], glue["pc_decl_auto_total"]) == ("16", "32")
    assert (glue["pc_decl_prefix"], glue["pc_decl_r2_auto"], glue["pc_decl_r3_auto"]) == ("8", "12", "20")


def test_declared_drill():
    assert 100 // 16 * 16 == 96 and (100 + 40) // 16 * 16 == 128
    text = chapter_outputs.section(NB, "prefix_caching-declared-vs-automatic", end="prefix_caching-radix")
    assert "= 96$" in text and "128 tokens" in text


def test_cascade_break_even():
    bw, overhead, extra = 3.35e12, 5.0, 2
    out = chapter_outputs.printed(NB, "OVERHEAD_US")
    expect_even = {}
    for h in (1, 8, 32):
        read_us = 4000 * 2 * h * 128 * 2 / bw * 1e6
        b = 2
        while (b - 1) * read_us <= extra * overhead:
            b += 1
        expect_even[h] = b
        line = next(ln for ln in out.splitlines() if ln.startswith(f"h_kv {h:2d}:"))
        assert f"one prefix read {read_us:5.2f} us" in line
        for batch in (2, 8, 32, 128):
            assert f"{batch}: {(batch - 1) * read_us - extra * overhead:+7.1f}" in line
        assert line.endswith(f"break-even b = {b}")
        assert chapter_outputs.glued(NB, f"pc_casc_even_{h}") == str(b)
    assert expect_even == {1: 18, 8: 4, 32: 2}
    # the thread's shape: at batch 8 the model loses with one KV head and wins with eight
    one = 4000 * 2 * 1 * 128 * 2 / bw * 1e6
    assert 7 * one < 10 < 7 * 8 * one


def test_cascade_drill_bytes():
    per_request = 4000 * 2 * 8 * 128 * 2
    assert per_request == 16_384_000
    saved_us = 7 * per_request / 3.35e12 * 1e6
    assert round(saved_us) == 34 and round(7 * per_request / 1e6) == 115
    text = chapter_outputs.section(NB, "prefix_caching-cascade-break-even", end="prefix_caching-sglang-frontend")
    assert "16.4$ MB" in text and "115 MB, about 34 µs" in text


def test_vllm_rule_on_the_thread_shapes():
    # worked by hand from use_cascade_attention, 132 SMs, p = 4000 (32 tiles of 128), decode (query length 1)
    # 8 q / 1 kv, b = 8: FlashDecoding used; cascade ceil(8*1/132)*32 = 32 against ceil(8*1*1*32/132) = 2: plain
    # 8 q / 8 kv, b = 8: one query per KV head, no FlashDecoding: cascade
    # 64 q / 8 kv, b = 8: cascade ceil(64/132)*32 = 32 against ceil(8*8*1*32/132) = 16: plain
    # b = 4: fewer than 8 requests: plain for every shape
    assert math.ceil(8 / 132) * 32 == 32 and math.ceil(8 * 32 / 132) == 2 and math.ceil(2048 / 132) == 16
    out = chapter_outputs.printed(NB, "def vllm_use_cascade")
    assert out.splitlines() == ["8 query heads, 1 KV: batch 8 -> False | batch 4 -> False",
                                "8 query heads, 8 KV: batch 8 -> True | batch 4 -> False",
                                "64 query heads, 8 KV: batch 8 -> False | batch 4 -> False",
                                "8 q / 1 kv, p = 4000, b = 8: cascade 8 CTAs, 32 waves | FlashDecoding 256 CTAs,"
                                " 2 waves | vLLM cascade: False",
                                "8 q / 1 kv, p = 16000, b = 64: cascade 8 CTAs, 125 waves | FlashDecoding 8000 CTAs,"
                                " 61 waves | vLLM cascade: False"]


def test_occupancy_and_follow_up_waves():
    # by hand: cascade prefix kernel h_q * ceil(b/128) CTAs, each over ceil(p/128) tiles; FD b*h_kv*tiles CTAs; 132 SMs
    sms = 132
    for p, b, want in ((4000, 8, (8, 256, 32, 2)), (16000, 64, (8, 8000, 125, 61))):
        tiles = math.ceil(p / 128)
        casc, fd = 8 * math.ceil(b / 128), b * 1 * tiles
        assert (casc, fd, math.ceil(casc / sms) * tiles, math.ceil(fd / sms)) == want
    g = chapter_outputs.cell_glue(NB, "def vllm_use_cascade")
    assert (g["pc_casc_ctas"], g["pc_fd_ctas"], g["pc_casc_waves"], g["pc_fd_waves"], g["pc_sms"]) == (
        "8", "256", "32", "2", str(sms))
    assert (g["pc_casc_waves_64"], g["pc_fd_waves_64"]) == ("125", "61")
    text = chapter_outputs.section(NB, "prefix_caching-cascade-break-even", end="prefix_caching-sglang-frontend")
    assert "SM occupancy" in text and "{glue:text}`pc_casc_waves_64` waves against {glue:text}`pc_fd_waves_64`" in text
    assert "one copy per request" not in text and "would not use FlashDecoding (MHA" in text


def test_declared_hash_and_lifetime():
    text = chapter_outputs.section(NB, "prefix_caching-declared-vs-automatic", end="prefix_caching-radix")
    assert "by its parent's hash" not in text and "Same exactness" not in text
    assert "vllmhashofblock" in text and "vllmprefixpool" in text and "RadixAttention" in text
    assert "longer than 128 tokens" in text.replace("\n", " ")
