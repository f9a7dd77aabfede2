"""Section flash_decoding-split-alignment of "FlashAttention-2 and Flash-Decoding".

The cell folds one float32 query's keys in pieces of 256 and compares the bits with a whole prefill. Here the
pieces are derived again from the rule (a grid from key 0; with a kernel per chunk a second grid from the last cut,
as SGLang's ragged kernel over the new tokens and paged kernel over the prefix), the attention is recomputed with a
merge written out here (not mha_kit's), and the table and glued values the chapter stored are checked against them.
"""
import numpy as np
import pytest

import chapter_outputs

N, D, SPLIT = 1000, 64, 256
CASES = {"fixed grid, chunks of 100": (900, False), "fixed grid, chunks of 128": (896, False),
         "kernel per chunk, chunks of 100": (900, True), "kernel per chunk, chunks of 128": (896, True),
         "kernel per chunk, cuts at multiples of 256": (768, True)}


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("flash_decoding")


def ends(cut, per_chunk):
    """Where each piece of the last query's keys ends."""
    grids = [(0, cut), (cut, N)] if per_chunk else [(0, N)]
    return [min(a + SPLIT, hi) for lo, hi in grids for a in range(lo, hi, SPLIT)]


def attend(q, k, v, piece_ends):
    """Merge the pieces' (max, sum, weighted values) by log-sum-exp rescaling, in float32."""
    m, total, acc, start = np.float32(-np.inf), np.float32(0), np.zeros(D, np.float32), 0
    for end in piece_ends:
        s = (k[start:end] @ q[0]) / np.float32(np.sqrt(D))
        mb = s.max()
        p = np.exp(s - mb)
        new = max(m, mb)
        a, b = np.exp(m - new), np.exp(mb - new)
        total, acc, m, start = a * total + b * p.sum(), a * acc + b * (p @ v[start:end]), new, end
    return acc / total


def test_pieces_and_bits(nb):
    rng = np.random.default_rng(38)  # the chapter's draw, in its order
    q = rng.standard_normal((1, D), dtype=np.float32)
    k, v = rng.standard_normal((2, N, D), dtype=np.float32)
    whole = attend(q, k, v, ends(0, False))
    w = np.exp((k @ q[0].astype(np.float64)) / np.sqrt(D))
    exact = (w / w.sum()) @ v.astype(np.float64)
    table = chapter_outputs.printed(nb, "def pieces").splitlines()
    for name, (cut, per_chunk) in CASES.items():
        e = ends(cut, per_chunk)
        out = attend(q, k, v, e)
        same = bool(np.array_equal(out, whole))
        assert np.abs(out - exact).max() < 1e-6  # every chunking is right to float32 precision
        row = next(line for line in table if line.startswith(name))
        assert row.split()[len(name.split())] == str(cut)
        assert str(e) in row
        assert row.split()[len(name.split()) + 1 + len(e)] == str(same)
        assert row.endswith("  0") == same  # a zero difference printed exactly when the bits agree
    # the claims the prose makes, pinned: fixed grids and aligned cuts keep the bits, cuts inside a split move them
    assert [ends(c, p) == ends(0, False) for c, p in CASES.values()] == [True, True, False, False, True]
    assert "every result within 1e-06 of float64 attention: True" in table


def test_glued(nb):
    g = lambda key: chapter_outputs.glued(nb, key)  # noqa: E731
    rng = np.random.default_rng(38)  # the chapter's draw, as in test_pieces_and_bits
    q = rng.standard_normal((1, D), dtype=np.float32)
    k, v = rng.standard_normal((2, N, D), dtype=np.float32)
    whole = attend(q, k, v, ends(0, False))
    same = {name: bool(np.array_equal(attend(q, k, v, ends(*case)), whole)) for name, case in CASES.items()}
    fixed = all(same[name] for name in CASES if name.startswith("fixed"))
    assert (g("fdsa_fixed_equal"), g("fdsa_moving_equal"), g("fdsa_aligned_equal")) == tuple(
        str(b) for b in (fixed, same["kernel per chunk, chunks of 100"],
                         same["kernel per chunk, cuts at multiples of 256"]))
    e = ends(900, True)
    assert g("fdsa_pieces_100") == " ".join(f"[{a}, {b})" for a, b in zip(e[-3:-1], e[-2:]))


def test_section_cites_sources(nb):
    text = chapter_outputs.section(nb, "flash_decoding-split-alignment", end="flash_decoding-fa3-splits")
    for key in ("flashinferpr1675", "sglangdetblog", "sglangissue2172", "sglangflashinferbackend", "sglangpr10417",
                "sglangpr10694", "flashinferissue2270", "vllmissue51902"):
        assert key in text
    assert "decoding_sampling-nondeterminism" in text and "flash_decoding-split-keys" in text
    assert "10+%" in text and "4,096" in text and "2,048" in text
    assert ":class: dropdown" in text and "In the interview" in text
    # the answers match the model: paged alone with no split is enough for the reduction, alignment is conservative
    # there, a fixed chunk of 100 is not argued from cuts inside splits, and the 10+% is the author's 2024 estimate
    assert "Yes, for the attention reduction" in text and "conservative rule" in text
    assert "they land\ninside splits" not in text and "fixed-grid rows restate the model" in text
    assert "disable_kv_split" in text and "10645" in text and "since their support is still in progress" in text
    assert 'the measured gap: "about 10%"' not in text and "2024" in text


def test_fixed_grid_ignores_cut_and_100_chunks_move_merge_points(nb):
    """The section says a fixed grid ignores the cut and that a kernel per chunk of 100 makes every cut at 100k a
    merge point, which a radix hit of another length shifts. The printed rows are held to the model (every
    fixed-grid row shows the pieces of any cut; the chunks-of-100 row adds its last cut, a multiple of 100), and the
    shift is recomputed here for a 50-key cached prefix."""
    text = chapter_outputs.section(nb, "flash_decoding-split-alignment", end="flash_decoding-fa3-splits")
    prose = " ".join(text.split())
    assert "a fixed chunk of 100 tokens makes every cut at $100k$ a merge point" in prose
    assert "A radix-cache hit of another length shifts them" in prose
    assert "On the fixed grid both chunkings give the pieces of one whole prefill" in prose
    table = chapter_outputs.printed(nb, "def pieces").splitlines()
    for name, (cut, per_chunk) in CASES.items():
        row = next(line for line in table if line.startswith(name))
        shown = [int(x) for x in row[row.index("[") + 1:row.index("]")].split(",")]
        if not per_chunk:  # the fixed grid: any cut at 100k gives the same pieces as the printed row
            assert all(ends(c, False) == shown for c in range(0, N, 100)), name
    moving = next(line for line in table if line.startswith("kernel per chunk, chunks of 100"))
    shown = [int(x) for x in moving[moving.index("[") + 1:moving.index("]")].split(",")]
    assert [e for e in shown if e % SPLIT and e != N] == [900]  # the last cut at 100k is a merge point
    cuts_fresh = list(range(100, N, 100))
    cuts_cached = list(range(50 + 100, N, 100))  # a 50-key radix hit, then chunks of 100
    assert not set(cuts_fresh) & set(cuts_cached)
    assert ends(cuts_cached[-1], True) != shown == ends(cuts_fresh[-1], True)
