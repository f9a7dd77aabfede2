"""Section state_space_models-chunk-vs-fused: fla's ``chunk`` stores one d_k x d_v state per chunk
boundary (chunk_fwd_h: h of shape [B, NT, H, K, V]) and computes outputs over a (V tiles, NT, B*H)
grid; ``fused_chunk`` loops over the chunks in one kernel over a (V tiles, K tiles, N*H) grid.
Bytes and work units recomputed from those shapes; the H100 SXM's 132 SMs (architecture whitepaper)
and 3.35 TB/s (datasheet)."""
import json
import pathlib

import pytest

from chapter_outputs import glued, notebook, section

NB = pathlib.Path(__file__).parents[1] / "book" / "state_space_models.ipynb"
TOKENS, CHUNK, HEADS, DK, DV, BF16 = 4096, 64, 16, 128, 128, 2
SMS, HBM = 132, 3.35e12
# fla fused_chunk_fwd at bc3b101: BK = min(max(next_pow2(K), 16), 64); BV autotuned over [64, 128]
BK = min(max(1 << (DK - 1).bit_length(), 16), 64)
NK = -(-DK // BK)
NVS = (-(-DV // 128), -(-DV // 64))


def _cells():
    return json.loads(NB.read_text())["cells"]


def _stored():
    cell = next(c for c in _cells() if "def cf_programs" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").splitlines()


def _mib(n):
    return f"{n // 2**30} GiB" if n % 2**30 == 0 else f"{n // 2**20} MiB"


@pytest.mark.parametrize("batch, states, qkvo, tiles, chains, partials", [
    (1, 32 * 2**20, 64 * 2**20, 1024, (32, 64), 64 * 2**20),
    (16, 512 * 2**20, 2**30, 16384, (512, 1024), 2**30),
])
def test_row(batch, states, qkvo, tiles, chains, partials):
    chunks = TOKENS // CHUNK
    assert (BK, NK, NVS) == (64, 2, (1, 2))
    assert f"BK = {BK}, {NK} key tiles, {NVS[0]}-{NVS[1]} value tiles" in _stored()[0]
    assert batch * chunks * HEADS * DK * DV * BF16 == states
    assert batch * TOKENS * HEADS * (2 * DK + 2 * DV) * BF16 == qkvo
    assert batch * HEADS * chunks == tiles and tuple(batch * HEADS * NK * nv for nv in NVS) == chains
    assert NK * batch * TOKENS * HEADS * DV * 4 == partials == 2 * states  # fp32 partial outputs: twice the states
    assert 2 * states == qkvo  # at chunk 64 and 128 x 128 states the state traffic equals q, k, v, o
    row = next(x for x in _stored() if x.split() and x.split()[0] == str(batch))
    us = round(2 * states / HBM * 1e6)
    assert row.split() == [str(batch), *_mib(states).split(), *_mib(2 * states).split(), *_mib(qkvo).split(),
                           str(us), "us", f"{tiles:,}", f"{chains[0]:,}-{chains[1]:,}", *_mib(partials).split()]


def test_flops_and_occupancy_lines():
    out = _stored()
    flop_h = 2 * CHUNK * DK * DV
    flop_o = 2 * CHUNK * DK * DV + 2 * CHUNK * CHUNK * (DK + DV)
    assert 3 * flop_h == flop_h + flop_o  # the state update is a third of the forward FLOPs
    assert f"state update {flop_h / 1e6:.2f} MFLOP, output {flop_o / 1e6:.2f} MFLOP" in out[-3]
    assert f"{flop_h / (flop_h + flop_o):.0%} of the forward FLOPs" in out[-3]
    b1 = [HEADS * NK * nv for nv in NVS]
    b16 = [16 * n for n in b1]
    assert f"{b1[0] / SMS:.0%}-{b1[1] / SMS:.0%} of the SMs" in out[-2]
    assert f"{b16[0] / SMS:.1f}-{b16[1] / SMS:.1f} chains per SM" in out[-2]
    assert f"{TOKENS:,} tokens, chunk {CHUNK} ({TOKENS // CHUNK} chunks)" in out[0]


def test_drill_numbers():
    states = 4 * (32768 // CHUNK) * HEADS * DK * DV * BF16
    partials = NK * 4 * 32768 * HEADS * DV * 4
    assert states == 2**30 and partials == 2**31  # 1 GiB of states, 2 GiB of fp32 partial outputs
    prog = [4 * HEADS * NK * nv for nv in NVS]
    assert prog == [128, 256]
    state_elems, qkvo_elems, partial_bytes = 2 * DK * DV // CHUNK, 2 * DK + 2 * DV, NK * 4 * DV
    assert state_elems == qkvo_elems  # the follow-up's per-token elements: states against q, k, v, o
    prose = " ".join(section(notebook("state_space_models"), "state_space_models-chunk-vs-fused",
                             end="state_space_models-aft", kinds=("markdown",)).split())
    assert f"that is {state_elems} against {qkvo_elems}, double the traffic" in prose
    # fused_chunk: NK fp32 partials per token and head; chunk: one bf16 state per chunk, per token
    assert (f"fp32 partial outputs per token are {partial_bytes:,} bytes against `chunk`'s "
            f"{DK * DV * BF16 // CHUNK} bytes of states") in prose
    assert (f"chunk states 1 GiB, fused_chunk fp32 partials 2 GiB, 64 (batch x head) chains as "
            f"{prog[0]}-{prog[1]} programs, {prog[0] / SMS:.2f}-{prog[1] / SMS:.2f} per SM") in _stored()[-1]


def test_section_placement_and_citations():
    text = "".join("".join(c["source"]) for c in _cells())
    mine = text.index("(state_space_models-chunk-vs-fused)=")
    assert text.index("(state_space_models-lightning)=") < mine < text.index("(state_space_models-aft)=")
    section = text[mine:text.index("(state_space_models-aft)=")]
    for key in ("yang2024gla{§3.3}", "flafusedchunk{common/fused_chunk.py", "flaissue436", "flaissue229"):
        assert key in section
    assert "NotImplementedError" in section and "bc3b101" in section
    assert "saves the traffic and the memory." not in section.split("In the GLA paper's algorithm")[0]
    assert "fp32 partial outputs" in section and "based/fused_chunk.py" in section


def test_glue():
    """Every ``ssm_cf_*`` value the prose renders, against the recomputation above."""
    nb = notebook("state_space_models")
    chunks = TOKENS // CHUNK

    def rng(a, b, fmt):
        return f"{a:{fmt}}\u2013{b:{fmt}}"

    want = {"ssm_cf_chunks": str(chunks), "ssm_cf_sms": str(SMS), "ssm_cf_bk": str(BK), "ssm_cf_nk": str(NK)}
    for batch in (1, 16):
        states = batch * chunks * HEADS * DK * DV * BF16
        want |= {f"ssm_cf_states_b{batch}": _mib(states),
                 f"ssm_cf_partials_b{batch}": _mib(NK * batch * TOKENS * HEADS * DV * 4),
                 f"ssm_cf_tiles_b{batch}": f"{batch * HEADS * chunks:,}",
                 f"ssm_cf_chains_b{batch}": rng(*(batch * HEADS * NK * nv for nv in NVS), ","),
                 f"ssm_cf_us_b{batch}": str(round(2 * states / HBM * 1e6))}
    want["ssm_cf_busy_b1"] = rng(*(HEADS * NK * nv / SMS for nv in NVS), ".0%")
    flop_h = 2 * CHUNK * DK * DV
    flop_o = 2 * CHUNK * DK * DV + 2 * CHUNK * CHUNK * (DK + DV)
    want["ssm_cf_flop_share"] = f"{flop_h / (flop_h + flop_o):.0%}"
    seq = 32768
    prog = [4 * HEADS * NK * nv for nv in NVS]
    want |= {"ssm_cf_drill_states": _mib(4 * (seq // CHUNK) * HEADS * DK * DV * BF16),
             "ssm_cf_drill_partials": _mib(NK * 4 * seq * HEADS * DV * 4),
             "ssm_cf_drill_bh": str(4 * HEADS), "ssm_cf_drill_prog": rng(*prog, ""),
             "ssm_cf_drill_per_sm": rng(*(p / SMS for p in prog), ".2f")}
    assert {k: glued(nb, k) for k in want} == want
