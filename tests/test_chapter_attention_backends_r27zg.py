"""Section attention_backends-xformers-overview: a BlockDiagonalMask for a packed batch of three sequences
(5, 3 and 4 tokens) against the same batch padded to the longest, counted here from the lengths alone
(sum of squares, B * L^2, triangles), and the packed causal attention checked against per-sequence attention."""
import math

import chapter_outputs

LENS = (5, 3, 4)


def _out():
    return chapter_outputs.printed(chapter_outputs.notebook("attention_backends"), "lens = [5, 3, 4]")


def _glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("attention_backends"), key)


def test_mask_picture_is_block_diagonal():
    rows = [line for line in _out().splitlines() if set(line) <= {"x", "."} and line]
    n = sum(LENS)
    assert len(rows) == n and all(len(r) == n for r in rows)
    start = 0
    for length in LENS:
        for r in rows[start:start + length]:
            assert r == "." * start + "x" * length + "." * (n - start - length)
        start += length


def test_useful_padded_and_wasted_scores():
    useful = sum(n * n for n in LENS)
    padded = len(LENS) * max(LENS) ** 2
    dense = sum(LENS) ** 2
    assert (useful, padded, dense) == (50, 75, 144)
    out = _out()
    assert f"useful scores {useful} = 5^2 + 3^2 + 4^2; dense packed mask {dense} entries ({dense - useful} masked)" in out
    assert f"padded batch 3 x 5^2 = {padded} scores, wasted {padded - useful} (33%); tokens 15 against 12" in out
    assert [_glued(k) for k in ("xfo_useful", "xfo_padded", "xfo_wasted", "xfo_dense")] == ["50", "75", "25", "144"]


def test_causal_counts_are_triangles():
    useful = sum(math.comb(n + 1, 2) for n in LENS)  # n (n + 1) / 2 per sequence
    padded = len(LENS) * math.comb(max(LENS) + 1, 2)
    assert (useful, padded) == (31, 45)
    assert f"causal: useful {useful}, padded lower triangles {padded}, wasted {padded - useful}" in _out()


def test_packing_does_not_change_the_result():
    assert "packed causal output equals per-sequence attention: True" in _out()
