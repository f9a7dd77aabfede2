"""Section continuous_batching-dynamic-splitfuse of "Continuous batching and chunked prefill".

DeepSpeed-MII's packing rule (mii/batching/ragged_batching.py: decodes first, one token each, then prompts in order,
each taking what is left of max_ragged_batch_size, a cut prompt continuing first in the next pass) worked by hand
for a 768-token budget, 20 running decodes and prompts of 2,000, 300 and 100 tokens, and compared with the
chapter's stored table and glued values.
"""
import math

import pytest
import chapter_outputs

BUDGET, DECODES = 768, 20  # DSStateManagerConfig.max_ragged_batch_size default; running requests
A, B, C = 2000, 300, 100


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("continuous_batching")


def by_hand():
    room = BUDGET - DECODES  # 748 prompt tokens while A prefills
    a_passes = math.ceil(A / room)
    a_last = A - (a_passes - 1) * room  # A's last chunk
    b_first = room - a_last  # B takes the rest of A's last pass
    assert 0 < b_first < B
    b_rest = B - b_first
    room4 = BUDGET - (DECODES + 1)  # A decodes from the next pass
    assert b_rest + C <= room4  # B's tail and all of C fit the fourth pass
    return a_passes, a_last, b_first, b_rest, DECODES + 1 + b_rest + C


def test_passes_per_prompt(nb):
    a_passes, _, _, _, _ = by_hand()
    assert chapter_outputs.glued(nb, "cb_sf_A_passes") == str(a_passes) == "3"
    assert chapter_outputs.glued(nb, "cb_sf_A_first") == str(a_passes)
    assert chapter_outputs.glued(nb, "cb_sf_B_passes") == "2"
    assert chapter_outputs.glued(nb, "cb_sf_B_first") == str(a_passes + 1)
    assert chapter_outputs.glued(nb, "cb_sf_C_passes") == "1"
    assert chapter_outputs.glued(nb, "cb_sf_C_first") == str(a_passes + 1)
    assert chapter_outputs.glued(nb, "cb_sf_npasses") == str(a_passes + 1)


def test_table_rows(nb):
    a_passes, a_last, b_first, b_rest, last_tokens = by_hand()
    out = chapter_outputs.printed(nb, "def splitfuse_passes")
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    room = BUDGET - DECODES
    expected = [[str(i), str(DECODES), "A", f"{room:,}", str(BUDGET)] for i in range(1, a_passes)]
    expected.append([str(a_passes), str(DECODES), "A", f"{a_last},", "B", str(b_first), str(BUDGET)])
    expected.append([str(a_passes + 1), str(DECODES + 1), "B", f"{b_rest},", "C", str(C), str(last_tokens)])
    assert rows == expected
    assert chapter_outputs.glued(nb, "cb_sf_last_tokens") == str(last_tokens) == "177"


def test_section_cites_sources(nb):
    text = chapter_outputs.section(nb, "continuous_batching-dynamic-splitfuse")
    for key in ("dsfastgen_blog{§3B}", "dsv2managerconfig{", "miiraggedbatching{", "dsmii462"):
        assert key in text
    assert "{ref}`continuous_batching-loop`" in text


def test_equal_passes_beat_unequal(nb):
    # FastGen §3A insight 3: for concave throughput f, 2 f(x) >= f(x + h) + f(x - h); toy f(x) = x / (x + 256)
    def f(x):
        return x / (x + 256)

    even, uneven = 2 * f(768), f(1280) + f(256)
    assert chapter_outputs.glued(nb, "cb_sf_even") == f"{even:.3f}"
    assert chapter_outputs.glued(nb, "cb_sf_uneven") == f"{uneven:.3f}"
    assert even > uneven


def test_768_is_a_default_not_a_knee(nb):
    text = chapter_outputs.section(nb, "continuous_batching-dynamic-splitfuse")
    assert "dsfastgen_blog{§3A, insights 1-3}" in text
    assert "chosen at the throughput knee" not in text and "measured that and chose" not in text
    assert "miiraggedbatching{lines 300-307}" in text
