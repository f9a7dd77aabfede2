"""Section disaggregated_serving-prefix-both-sides: the bytes a decode-side prefix hit keeps off the wire for a
10,000-token Llama 3 70B prompt, their time over one 400 Gb/s port and per GPU at TP 8, and the size of SGLang's
PD + spec-decode metadata, recomputed from Llama 3 70B's shape (config.json) and the port's rate, not through
mha_kit. The prose: every source the section leans on is cited, and both first-token designs are named."""
import re

import pytest

import chapter_outputs

L, KV, HD, D = 80, 8, 128, 8192  # Llama 3 70B: layers, KV heads, head size, hidden size
PER_TOKEN = 2 * L * KV * HD * 2  # K and V, bf16
PORT, TP, PROMPT = 50e9, 8, 10_000  # 400 Gb/s InfiniBand NDR; one port per GPU on a DGX H100
LABEL = "disaggregated_serving-prefix-both-sides"


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("disaggregated_serving")


def rows(nb):
    out = chapter_outputs.printed(nb, "for cached in (0, 4_000, 8_000)")
    return {int(m[0].replace(",", "")): m[1:] for m in
            re.findall(r"^\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+\S+ \w+\s+([\d.]+)\s+([\d.]+)$", out, re.M)}


@pytest.mark.parametrize("cached", [0, 4_000, 8_000])
def test_suffix_bytes_and_times(nb, cached):
    moved = PROMPT - cached
    got = rows(nb)[cached]
    assert int(got[0].replace(",", "")) == moved
    assert int(got[1].replace(",", "")) == moved * PER_TOKEN  # exact bytes
    ms = 1e3 * moved * PER_TOKEN / PORT
    assert got[2] == f"{ms:.1f}" == chapter_outputs.glued(nb, f"ds_both_ms_{cached}")
    assert got[3] == f"{ms / TP:.1f}"


def test_worked_values(nb):
    assert chapter_outputs.glued(nb, "ds_both_ms_0") == f"{1e3 * PROMPT * PER_TOKEN / PORT:.1f}" == "65.5"
    assert chapter_outputs.glued(nb, "ds_both_ms_8000") == f"{1e3 * 2_000 * PER_TOKEN / PORT:.1f}" == "13.1"
    assert 2_000 * PER_TOKEN == 625 * 2**20  # 625 MiB left after an 8,000-token hit, as the chapter glues it
    assert chapter_outputs.glued(nb, "ds_both_bytes_8000") == "625 MiB"


def test_spec_metadata(nb):
    spec = 2 * D + 16 * 4 + 16 * 8  # bf16 hidden state, fp32 top-16 probabilities, int64 top-16 ids
    assert spec == 16_576
    assert chapter_outputs.glued(nb, "ds_both_spec") == f"{spec:,}"
    assert f"{spec / PER_TOKEN:.3f}" in chapter_outputs.printed(nb, "spec_meta =")
    assert 1 / 21 < spec / PER_TOKEN < 1 / 19  # "a twentieth of one token's KV"


def test_draft_kv(nb):
    draft = 2 * 1 * KV * HD * 2  # one-layer EAGLE-3 head, K and V, bf16
    assert draft == 4_096 and PER_TOKEN // draft == 80
    out = chapter_outputs.printed(nb, "draft_per_token =")
    assert f"{draft:,} bytes" in out and f"{draft * PROMPT:,} bytes" in out and "1/80 " in out
    assert chapter_outputs.glued(nb, "ds_both_draft_tok") == "4 KiB"
    assert chapter_outputs.glued(nb, "ds_both_draft_bytes") == f"{draft * PROMPT / 2**20:.1f} MiB"  # 39.1 MiB
    assert chapter_outputs.glued(nb, "ds_both_draft_ratio") == "80"


def test_prose_cites_the_threads_and_code(nb):
    text = chapter_outputs.section(nb, LABEL, end="disaggregated_serving-ratio")
    for key in ("dynamoissue397", "dynamoissue849", "dynamoissue850", "dynamopr340", "dynamoprefillrouter",
                "vllmpr32553", "vllmnixlmatched", "vllmkvcachemanager", "sglangdecodeprefix",
                "sglangmetadatabuffers", "sglangdraftkvtransfer", "vllmpr34388", "vllmissue54926",
                "mooncakeissue17", "qin2025mooncake{§3.1, Figure 3}"):
        assert key in text, key
    for phrase in ("get_num_new_matched_tokens", "--disaggregation-decode-enable-radix-cache", "$N-1$",
                   "For PD + spec decode", "logits", "We should also transfer draft", ":class: dropdown"):
        assert phrase in text, phrase
    assert ":class: dropdown followup" not in text  # the chapter-end chain keeps its three
