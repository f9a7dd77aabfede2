"""Section state_space_models-chunk-vs-fused: fla's ``chunk`` stores one d_k x d_v state per chunk
boundary (chunk_fwd_h: h of shape [B, NT, H, K, V]) and computes outputs over a (V tiles, NT, B*H)
grid; ``fused_chunk`` loops over the chunks in one kernel over a (V tiles, K tiles, N*H) grid.
Bytes and work units recomputed from those shapes; the H100 SXM's 132 SMs (architecture whitepaper)
and 3.35 TB/s (datasheet)."""
import json
import pathlib

import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "state_space_models.ipynb"
TOKENS, CHUNK, HEADS, DK, DV, BF16 = 4096, 64, 16, 128, 128, 2
SMS, HBM = 132, 3.35e12


def _cells():
    return json.loads(NB.read_text())["cells"]


def _stored():
    cell = next(c for c in _cells() if "cf_chains = cf_B * cf_H" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").splitlines()


def _mib(n):
    return f"{n // 2**30} GiB" if n % 2**30 == 0 else f"{n // 2**20} MiB"


@pytest.mark.parametrize("batch, states, qkvo, tiles, chains", [
    (1, 32 * 2**20, 64 * 2**20, 1024, 16),
    (16, 512 * 2**20, 2**30, 16384, 256),
])
def test_row(batch, states, qkvo, tiles, chains):
    chunks = TOKENS // CHUNK
    assert batch * chunks * HEADS * DK * DV * BF16 == states
    assert batch * TOKENS * HEADS * (2 * DK + 2 * DV) * BF16 == qkvo
    assert batch * HEADS * chunks == tiles and batch * HEADS == chains
    assert 2 * states == qkvo  # at chunk 64 and 128 x 128 states the state traffic equals q, k, v, o
    row = next(x for x in _stored() if x.split() and x.split()[0] == str(batch))
    us = round(2 * states / HBM * 1e6)
    assert row.split() == [str(batch), *_mib(states).split(), *_mib(2 * states).split(), *_mib(qkvo).split(),
                           str(us), "us", f"{tiles:,}", f"{chains:,}"]


def test_occupancy_line():
    line = _stored()[-1]
    assert f"{HEADS / SMS:.0%} of the SMs" in line and f"{16 * HEADS / SMS:.1f} chains per SM" in line
    assert f"{TOKENS:,} tokens, chunk {CHUNK} ({TOKENS // CHUNK} chunks)" in _stored()[0]


def test_drill_numbers():
    assert 4 * (32768 // CHUNK) * HEADS * DK * DV * BF16 == 2**30  # batch 4, 32K tokens: 1 GiB
    assert 4 * HEADS == 64 < SMS
    assert 2 * DK * DV // CHUNK == 2 * DK + 2 * DV == 512  # the follow-up's per-token elements


def test_section_placement_and_citations():
    text = "".join("".join(c["source"]) for c in _cells())
    mine = text.index("(state_space_models-chunk-vs-fused)=")
    assert text.index("(state_space_models-lightning)=") < mine < text.index("(state_space_models-aft)=")
    section = text[mine:text.index("(state_space_models-aft)=")]
    for key in ("yang2024gla{§3.3}", "flafusedchunk{common/fused_chunk.py", "flaissue436", "flaissue229"):
        assert key in section
    assert "NotImplementedError" in section and "bc3b101" in section
