"""Section speculative_decoding-output-drift of "Speculative decoding and the KV cache".

Recomputes the section's numbers another way: the split-K sums with ``np.add.accumulate`` (a sequential
float32 running sum) instead of the chapter's loop, bf16 rounding through ``ml_dtypes`` instead of
``mk.round_bf16``, and one logits row column by column with ``mk.chunked_sum``; then compares them with the
stored outputs. Also checks the section's citations, its three dropdown follow-ups and their rubrics.
"""
import pathlib
import re

import ml_dtypes
import numpy as np
import pytest

import chapter_outputs
import mha_kit as mk

F32 = np.float32
NB = chapter_outputs.notebook("speculative_decoding")
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text()
LABEL = "(speculative_decoding-output-drift)="


def glued(key):
    return chapter_outputs.glued(NB, key)


def section():
    return chapter_outputs.section(NB, LABEL[1:-2], end="## Summary", kinds=("markdown",))


def split_k(x, w, splits, rows_per_block=50):
    """(m, d) @ (d, v): per chunk a sequential float32 running sum of the products, then the partials in order."""
    out = np.empty((x.shape[0], w.shape[1]), F32)
    for r0 in range(0, x.shape[0], rows_per_block):
        xb = x[r0:r0 + rows_per_block]
        total = np.zeros((xb.shape[0], w.shape[1]), F32)
        for chunk in np.array_split(np.arange(x.shape[1]), splits):
            products = xb[:, chunk, None] * w[chunk][None]  # (m, c, v) float32 products
            total = (total + np.add.accumulate(products, axis=1, dtype=F32)[:, -1]).astype(F32)
        out[r0:r0 + rows_per_block] = total
    return out


def bf16(a):
    return np.asarray(a, F32).astype(ml_dtypes.bfloat16).astype(F32)


def test_one_row_differs_bitwise_between_decode_and_verify_kernels():
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((5, 512)).astype(F32)
    w = (3 * rng.standard_normal((512, 1024)) / np.sqrt(512)).astype(F32)
    decode, verify = split_k(hidden[-1:], w, 4)[0], split_k(hidden, w, 1)[-1]
    for col in (0, 17, 1023):  # the running sum agrees with mk.chunked_sum, column by column
        assert decode[col] == mk.chunked_sum(hidden[-1] * w[:, col], 4)
        assert verify[col] == mk.chunked_sum(hidden[-1] * w[:, col], 1)
    differ = int((decode != verify).sum())
    assert 0 < differ < 1024
    assert glued("sdo_differ") == f"{differ}"
    assert glued("sdo_differ_pct") == f"{100 * differ / 1024:.0f}"
    assert glued("sdo_maxdiff") == f"{np.abs(decode - verify).max():.1e}"


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(1)
    x_in = rng.standard_normal((300, 256)).astype(F32)
    mats = [(1.5 * rng.standard_normal((256, 256)) / np.sqrt(256)).astype(F32) for _ in range(3)]
    head = (3 * rng.standard_normal((256, 512)) / np.sqrt(256)).astype(F32)

    def logits(splits, low):
        keep = bf16 if low else (lambda a: a)
        x = keep(x_in)
        for a in mats:
            x = keep(np.tanh(split_k(x, a, splits)))
        return keep(split_k(x, head, splits))

    stats = {}
    for name, low in (("float32", False), ("bf16", True)):
        dec, ver = logits(4, low), logits(1, low)
        order = np.argsort(-dec, axis=1, kind="stable")
        a, b = np.take_along_axis(dec, order, 1), np.take_along_axis(ver, order, 1)
        gap = a[:, :-1] - a[:, 1:]
        # reversed: the verify kernel puts the later one first, or ties them and the lower id was the later one
        flipped = (b[:, 1:] > b[:, :-1]) | ((b[:, 1:] == b[:, :-1]) & (order[:, 1:] < order[:, :-1]))
        shift = np.abs((b[:, :-1] - b[:, 1:]) - gap)
        stats[name] = dict(flips=int(flipped.sum()), small=int(flipped[gap < 1e-5].sum()),
                           small_pairs=int((gap < 1e-5).sum()), wide=int(flipped[gap >= 1e-5].sum()),
                           shift=float(shift.mean()), max=float(shift.max()), top=float(np.mean(gap[:, 0] < 0.25) * 4),
                           rows=float((dec != ver).any(1).mean()), argmax=int((dec.argmax(1) != ver.argmax(1)).sum()),
                           ties=int((gap[:, 0] == 0).sum()), pairs=gap.size,
                           top2=float(np.abs((b[:, 0] - b[:, 1]) - (a[:, 0] - a[:, 1])).mean()))
    return stats


def test_toy_network_flips_only_near_ties_in_float32(toy):
    s = toy["float32"]
    assert s["wide"] == 0 and s["flips"] == s["small"] > 0  # every reversed pair was within 1e-5 nats
    assert s["argmax"] == 0 and s["ties"] == 0
    for key in ("flips", "small", "small_pairs", "wide", "argmax", "ties"):
        want = f"{s[key]:,}" if key == "flips" else f"{s[key]}"
        assert glued(f"sdo_float32_{key}") == want, key
    assert glued("sdo_float32_shift") == f"{s['shift']:.1e}"
    assert glued("sdo_float32_max") == f"{s['max']:.1e}"
    assert glued("sdo_f0") == f"{s['top']:.1f}"
    assert glued("sdo_pairs") == f"{s['pairs']:,}" == "153,300"  # 300 rows x 511 neighbouring pairs
    assert glued("sdo_rows") == "300"


def test_bf16_activations_turn_last_bits_into_steps(toy):
    s, f = toy["bf16"], toy["float32"]
    assert s["rows"] < f["rows"] and s["max"] > 1000 * f["max"] and s["wide"] > 0 and s["ties"] > 0
    assert glued("sdo_bf16_flips") == f"{s['flips']:,}"
    for key in ("argmax", "ties", "small", "wide"):
        assert glued(f"sdo_bf16_{key}") == f"{s[key]}", key
    assert glued("sdo_bf16_rows") == f"{s['rows']:.0%}"
    assert glued("sdo_bf16_shift") == f"{s['shift']:.1e}"
    assert glued("sdo_bf16_max") == f"{s['max']:.1e}"


def test_generation_level_rates_and_tolerance(toy):
    for name in ("float32", "bf16"):
        p = toy[name]["top"] * toy[name]["shift"] / 2
        assert glued(f"sdo_{name}_p") == f"{p:.1e}"
        assert glued(f"sdo_{name}_1k") == f"{1 - (1 - p) ** 1000:.2%}"
        assert glued(f"sdo_{name}_8k") == f"{1 - (1 - p) ** 8000:.0%}"
        assert glued(f"sdo_{name}_first") == f"{1 / p:,.0f}"
        assert glued(f"sdo_{name}_prompts") == f"{500 * (1 - (1 - p) ** 512):.1f}"
        # the top-2 pair alone: its mean shift, and the per-token rate with it
        assert glued(f"sdo_{name}_top2shift") == f"{toy[name]['top2']:.1e}"
        assert glued(f"sdo_{name}_p_top2") == f"{toy[name]['top'] * toy[name]['top2'] / 2:.1e}"
    assert toy["bf16"]["top2"] > toy["bf16"]["shift"]  # the all-pairs average understates the top-2 pair's shift
    assert glued("sdo_reported_p") == "5.3e-03 to 6.7e-03"  # 1/190 and 1/150 (mlx-lm #1470)
    assert glued("sdo_tol") == f"{2 * toy['bf16']['max']:.3f}" == "0.125"  # twice one bf16 step at logits in [8, 16)


KEYS = ("vllmspeclossless", "vllmfaqvary", "vllmissue7627", "vllmissue54506", "vllmpr52522", "rblnpr630",
        "mlxlmpr1592", "mlxlmissue1470", "leviathan2023fast", "vllmbatchinvariance", "vllmissue18902",
        "trtllmpr17701", "tokenspeedissue904", "vllmpr41335")


def test_section_cites_its_sources_and_has_three_dropdown_follow_ups():
    text = section()
    for key in KEYS:
        assert re.search(rf"[`,]{key}[{{`]", text), key
        assert f"{{{key}," in BIB, key
    assert "{ref}`decoding_sampling-nondeterminism`" in text and "M = k + 1" in text
    blocks = text.split(":::{admonition}")[1:]
    assert [b.split("\n")[0].strip()[:3] for b in blocks] == ["[E]", "[M]", "[H]"]
    assert all(b.split("\n")[1] == ":class: dropdown" for b in blocks)  # not flashcards: the chain stays at three
    for block in blocks:
        answer = block.split("**Strong answer.**")[1].split("**Listening for.**")[0]
        rubric = block.split("**Listening for.**")[1].split("**Trap.**")[0].strip().splitlines()
        assert 2 <= len(rubric) <= 5
        for line in rubric:
            anchor = re.match(r'^- [^"]+: "([^"]+)"$', line).group(1)
            assert " ".join(anchor.split()).casefold() in " ".join(answer.split()).casefold(), anchor


def test_oracle_judges_the_emitted_token_and_sources_keep_their_status():
    text = " ".join(section().split())
    # the first-divergence oracle is spec-off's logprob for the token spec-on emitted, not spec-off's own top-2 margin
    assert "spec-off top-2 logprob margin must be below" not in text
    assert "only if the spec-off top-2" not in text
    assert text.count("token spec-on emitted") >= 3  # step 3, the interview tip and the [H] answer
    assert "from this effect alone" not in text and "72%" in text and "81%" in text
    assert "(closed, unmerged)" in text and "closed, not merged" in BIB.split("{mlxlmpr1592,")[1].split("\n}")[0]
    assert "pull request 52522 (open)" in BIB and "An open vLLM pull request" in text
