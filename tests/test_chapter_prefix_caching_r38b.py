"""Section prefix_caching-blend-lookup of "Prefix caching in depth": C1 and C3 stored, C2 new.

The counts are recomputed here from the rule each lookup follows, written out independently of the chapter's cell: a
prefix lookup (LMCache 0.3.1's LMCacheEngine.lookup, one count for vLLM's get_num_new_matched_tokens) returns the
tokens of the chunks before the first miss; a position-independent one returns every stored chunk. Then the keys the
cell printed (SHA-256 of the uint32 token ids, LMCache 0.3.1's SegmentTokenDatabase), recomputed from the cell's
seeded draw with hashlib, the corrected "wherever it
sits" sentence, and the section's citations.
"""
import hashlib
import re
from fractions import Fraction
from itertools import product

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("prefix_caching")
MARKER = "CHUNK_TOKENS = 512"
CHUNK, N_CHUNKS = 512, 3


def prefix_tokens(stored_flags):
    """Tokens a prefix lookup returns: whole chunks up to, not including, the first chunk not stored."""
    count = 0
    for flag in stored_flags:
        if not flag:
            break
        count += CHUNK
    return count


def _printed_rows():
    text = chapter_outputs.printed(NB, MARKER)
    return re.findall(r"^(C\d): key ([0-9a-f]{12})\.\.\., 512 tokens, stored: (yes|no)$", text, re.M)


def test_prefix_rule_on_every_pattern():
    """The glued counts follow the rule applied to the stored flags the chapter printed, and a prefix lookup never
    loads more than a position-independent one (the rule checked on all 8 patterns of three chunks)."""
    for flags in product((False, True), repeat=N_CHUNKS):
        assert prefix_tokens(flags) <= CHUNK * sum(flags)
    flags = [stored == "yes" for _, _, stored in _printed_rows()]
    assert len(flags) == N_CHUNKS
    prefix = int(chapter_outputs.glued(NB, "pc_lk_prefix_saved").replace(",", ""))
    anywhere = int(chapter_outputs.glued(NB, "pc_lk_anywhere_saved").replace(",", ""))
    assert (prefix, anywhere) == (prefix_tokens(flags), CHUNK * sum(flags))
    assert prefix <= anywhere


def test_counts_printed_and_glued():
    total = CHUNK * N_CHUNKS
    prefix, anywhere = prefix_tokens((True, False, True)), CHUNK * 2
    assert chapter_outputs.glued(NB, "pc_lk_chunk") == f"{CHUNK}"
    assert chapter_outputs.glued(NB, "pc_lk_prefix_saved") == f"{prefix:,}"
    assert chapter_outputs.glued(NB, "pc_lk_anywhere_saved") == f"{anywhere:,}"
    assert chapter_outputs.glued(NB, "pc_lk_total") == f"{total:,}"
    text = chapter_outputs.printed(NB, MARKER)
    for loaded in (prefix, anywhere):  # loaded from the cache, not "saved": the blend still recomputes a share
        assert (f"loads {loaded:,} tokens from the cache ({Fraction(loaded, total)} of the prompt), prefills "
                f"{total - loaded:,} of {total:,}; the blend still recomputes a share of the loaded tokens") in text
    assert "saves" not in text
    assert "(1/3 of the prompt)" in text and "(2/3 of the prompt)" in text


def _key(tokens, parent=""):
    """SHA-256 of the chunk's token ids as uint32, chained to a parent key: written out here, as LMCache 0.3.1."""
    return hashlib.sha256(parent.encode() + np.asarray(tokens, np.uint32).tobytes()).hexdigest()


def test_keys_printed():
    """The printed keys are recomputed from the cell's draw: seed 38, C1, C2, C3 then C2', 512 ids below 128,256."""
    rng = np.random.default_rng(38)
    ids = {name: rng.integers(0, 128_256, CHUNK) for name in ("C1", "C2", "C3")}
    c2_new = rng.integers(0, 128_256, CHUNK)
    text = chapter_outputs.printed(NB, MARKER)
    rows = _printed_rows()
    stored = {_key(ids["C1"]), _key(ids["C3"])}  # the section's setup: C1 and C3 stored
    assert rows == [(name, _key(ids[name])[:12], "yes" if _key(ids[name]) in stored else "no") for name in ids]
    assert [(name, s) for name, _, s in rows] == [("C1", "yes"), ("C2", "no"), ("C3", "yes")]
    assert len({key for _, key, _ in rows}) == 3  # three different chunks, three different keys
    own = _key(ids["C3"])[:12]
    assert f"C3's own key after C2 and after C2': {own} in both" in text
    chained = [_key(ids["C3"], _key(middle, _key(ids["C1"]))) for middle in (ids["C2"], c2_new)]
    assert chained[0] != chained[1]
    assert (f"C3's prefix-chained key: {chained[0][:12]} (C1, C2, C3) vs {chained[1][:12]} (C1, C2', C3) "
            f"| equal: {chained[0] == chained[1]}") in text


def test_wherever_corrected():
    text = chapter_outputs.section(NB, "prefix_caching-non-prefix", end="prefix_caching-blend-in-practice")
    assert "wherever it sits" not in text
    assert "only while every chunk before it is stored too" in text and "{ref}`prefix_caching-blend-lookup`" in text


def test_section_text():
    text = chapter_outputs.section(NB, "prefix_caching-blend-lookup", end="## When the cache is full")
    for key in ("lmcache835", "vllmkvconnectorbase", "lmcache031src", "lmcache3238", "lmcache4663", "lmcache2988",
                "yao2025cacheblend"):
        assert f"{{cite:p}}`{key}" in text
    assert "get_num_new_matched_tokens" in text and "largest prefix of prompt-tokens" in text
    assert "0.3.1 (25 June 2025)" in text and "9fc6e1af" in text and "0.18.0" in text
    assert ":class: tip" in text and text.count(":class: dropdown") == 1
    # the review's corrections: the full Notes sentence, a count with an async flag, the offset, a contract not an
    # impossibility, "loads" not "saved", one workload's 1x, an LMCache team reply (not "its maintainer")
    assert "actually available at the time of\nthe call" in text or "actually available at the time of the call" in text
    assert "one integer" not in text and "asynchronous" in text and "(exclusive)" in text
    assert "claims the gap and computes it itself" in text and "512 tokens saved" not in text
    assert "about 1 time" not in text and "one reported" in text and "per its\nmaintainer" not in text
    assert "provided its token ids are the same in both prompts" in text
