"""Section position_encodings-t5-buckets of the position-encodings chapter: why the buckets are logarithmic.

Recomputed without mha_kit from the bucket formula of T5's `_relative_position_bucket` (causal, 32 buckets,
max_distance 128): n < 16 is exact, else 16 + int(log(n / 16) / log(128 / 16) * 16), capped at 31.
"""
import math

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("position_encodings")
_SOURCES = ["".join(c["source"]) for c in NB["cells"]]
_START = next(i for i, s in enumerate(_SOURCES) if "(position_encodings-t5-buckets)=" in s)  # opens mid-cell
_STOP = next(i for i, s in enumerate(_SOURCES) if s.startswith("(position_encodings-deberta)="))
SECTION = "\n".join(_SOURCES[_START:_STOP])
OUT = chapter_outputs.printed(NB, "decoder = mk.t5_bucket_ranges(False")


def bucket(n):
    if n < 16:
        return n
    return min(31, 16 + int(math.log(n / 16) / math.log(128 / 16) * 16))


def spans():
    out = {}
    for n in range(1000):
        b = bucket(n)
        lo, hi = out.get(b, (n, n))
        out[b] = (min(lo, n), max(hi, n))
    return out


@pytest.mark.parametrize("b", [16, 20, 25, 30])
def test_printed_rows(b):
    near, far = spans()[b]
    width = far - near + 1
    assert f"bucket {b}: offsets {near:>3}..{far:<3} width {width:>2} = {width / near:.0%} of {near}" in OUT


def test_fraction_range_and_last_bucket():
    s = spans()
    fr = [(s[b][1] - s[b][0] + 1) / s[b][0] for b in range(16, 31)]
    assert f"between {min(fr):.0%} and {max(fr):.0%}" in OUT and "11%" in f"{min(fr):.0%}"
    assert f"(128/16)^(1/16) - 1 = {8 ** (1 / 16) - 1:.1%}" in OUT
    assert s[31][0] == 113 and "every offset from 113 back" in OUT


def test_linear_table_comparison():
    reach, width = 32 - 1, math.ceil(128 / 32)  # 32 equal buckets of width 1; the width that covers 0..127
    assert f"width 1 reaches offset {reach}; to reach 128 needs width {width}" in OUT
    assert chapter_outputs.glued(NB, "t5_linear_reach") == str(reach)
    assert chapter_outputs.glued(NB, "t5_linear_width") == str(width)
    assert "{glue:text}`t5_linear_reach`" in SECTION and "offset 31" not in SECTION


def test_rationale_cited_and_linked():
    chapter_outputs.assert_cited(SECTION, ["hft5attention", "press2022alibi"])
    assert "That is why Press et al." not in SECTION
    assert "graceful generalization to longer sequences" in SECTION
    assert "{ref}`rope_scaling-rope-vs-alibi`" in SECTION
