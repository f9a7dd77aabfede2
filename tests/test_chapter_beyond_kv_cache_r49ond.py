"""Section beyond_kv_cache-cross-layer of "After GQA and MLA": Apple's on-device model among those that ship
cross-layer sharing, cited, with its 37.5% cut (Block 2 = 3/8 of the layers stores no K/V: the cut is
3/8 of the cache) and the link to the section that sizes it on a 3B shape."""
import chapter_outputs

NB = chapter_outputs.notebook("beyond_kv_cache")


def test_apple_in_who_ships_it():
    text = chapter_outputs.section(NB, "beyond_kv_cache-cross-layer", end="beyond_kv_cache-xkv")
    assert f"{100 * 3 / 8:.1f}% of the layers" in text and f"falls by {100 * 3 / 8:.1f}%" in text
    chapter_outputs.assert_cited_in_list(text, ["applefm2025", "afm2025press", "applefm2025blog"])
    assert "first\nblock's final layer" in text or "first block's final layer" in text
    assert "reads the first block's cache" not in text
    assert "{ref}`kv_cache_calculator-3b-on-device`" in text
    assert "kv_cache_calculator-3b-on-device" in chapter_outputs.book_labels()
