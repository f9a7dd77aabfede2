"""Section serving_kv_cache-ring-chunk: a sliding-window ring under chunked prefill needs W - 1 + C slots,
ceil((C + W - 1) / B) blocks (ONNX Runtime GenAI docs/paged_attention_engine.md), for Mistral 7B v0.1's W = 4,096
(8 KV heads of 128, bf16) and B = 16."""
import math

import chapter_outputs

NB = chapter_outputs.notebook("serving_kv_cache")
W, B = 4096, 16
PER_LAYER_TOKEN = 2 * 8 * 128 * 2  # K and V, 8 KV heads of 128, bf16


def _fewest_slots(window, chunk, n=40):
    # independent restatement: a slot count works when no query's window key is overwritten by a later
    # position of the same or an earlier chunk before that query reads it (write-then-read)
    for slots in range(1, 20):
        ok = True
        for start in range(0, n, chunk):
            end = min(start + chunk, n)
            for q in range(start, end):
                for key in range(max(0, q - window + 1), q + 1):
                    # the newest position written so far that shares key's slot
                    last = max(p for p in range(0, end) if p % slots == key % slots)
                    ok &= last == key
        if ok:
            return slots
    raise AssertionError


def test_toy_ring():
    out = chapter_outputs.printed(NB, "def ring_holds(")
    for c in range(1, 6):
        fewest = _fewest_slots(4, c)
        assert fewest == 4 - 1 + c
        assert f"W = 4, chunk C = {c}: fewest slots {fewest}, W - 1 + C = {4 - 1 + c}" in out


def test_mistral_ring():
    out = chapter_outputs.printed(NB, "W, B = mistral.sliding_window")
    assert f"a ring of W alone is {W // B} blocks; 4 KiB per token per layer" in out
    expected = {1: 256, 512: 288, 2048: 384, 4096: 512, 8192: 768}
    for c, r in expected.items():
        assert math.ceil((c + W - 1) / B) == r
        mib = r * B * PER_LAYER_TOKEN // 2**20
        assert f"R = ceil({c + W - 1:,} / {B}) = {r:>3} blocks = {r * B:>6,} slots" in out
        assert f"{mib} MiB per layer, largest chunk it takes {r * B - (W - 1):,}" in out
    assert chapter_outputs.glued(NB, "skv_ring_w_blocks") == "256"
    assert chapter_outputs.glued(NB, "skv_ring_512") == "288"
    assert chapter_outputs.glued(NB, "skv_ring_2048") == "384"
    assert chapter_outputs.glued(NB, "skv_ring_8192") == "768"
    assert chapter_outputs.glued(NB, "skv_ring_8192_x") == "3"
    assert chapter_outputs.glued(NB, "skv_ring_512_cap") == "513"
    assert chapter_outputs.glued(NB, "skv_ring_cw") == str(math.ceil((4096 + W - 1) / B))


def test_prose_cites_and_links():
    text = chapter_outputs.section(NB, "serving_kv_cache-ring-chunk", end="## An 8-bit cache with one scale per head")
    chapter_outputs.assert_cited(text, ["mistralsrcref", "ortgenaipagedengine"])
    chapter_outputs.assert_links(text, ["continuous_batching-budget"])
    assert "In the interview" in text and "dropdown followup" in text
    assert "block_table_windowed" in text and "one block table for every layer" not in text
    assert "This prevents a transactional step from wrapping\n  the ring while older positions are still live" in text
    assert "a0c04eb" in text and r"\lceil (C + W - 1) / B \rceil" in text
