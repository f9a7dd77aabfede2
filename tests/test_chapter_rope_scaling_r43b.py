"""Section rope_scaling-alibi-rope-experiment of "Stretching RoPE": the grid and the perplexity sweep's compute.

Recomputed from the GPT-2 small shape (12 layers, width 768, feed-forward 3,072, vocabulary 50,257; Radford et al.
2019 via HF GPT2Config) without mha_kit: forward FLOPs per token = 2 x (4 d^2 per layer for Q, K, V, O
+ 2 d d_ff per layer for the MLP + d V for the logits) + 4 d x (mean causal keys) per layer for QK^T and PV.
"""
import re

import pytest

import chapter_outputs

LAYERS, D, D_FF, VOCAB = 12, 768, 3072, 50257
L, WINDOWS, STRIDE = 2048, 1000, 256
LENGTHS = [L, 2 * L, 4 * L, 8 * L]
# the experiment's arms, each with the multiple of L it is trained or scaled for (YaRN's factor 8), and its seeds
REACH = {"ALiBi": 1, "RoPE": 1, "RoPE + YaRN": 8}
SEEDS = 3
RUNS = len(REACH) * SEEDS
NB = chapter_outputs.notebook("rope_scaling")
OUT = chapter_outputs.printed(NB, "L_TRAIN, WINDOWS, STRIDE")


def flops_per_token(n):
    keys = (n + 1) / 2
    return LAYERS * (2 * 4 * D * D + 2 * 2 * D * D_FF + 4 * keys * D) + 2 * D * VOCAB


@pytest.mark.parametrize("n", LENGTHS)
def test_sweep_row(n):
    scored, sliding = WINDOWS * n, WINDOWS * n // STRIDE * n
    row = re.search(rf"^\s*{n:,}\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)$", OUT, re.M)
    assert row, f"no row for {n}"
    got = [int(g.replace(",", "")) for g in row.groups()]
    assert got[0] == scored and got[2] == sliding
    assert got[1] == round(scored * flops_per_token(n) / 1e12)
    assert got[3] == round(sliding * flops_per_token(n) / 1e12)


def test_totals_and_glue():
    tokens = sum(WINDOWS * n for n in LENGTHS)
    non = sum(WINDOWS * n * flops_per_token(n) for n in LENGTHS)
    slid = sum(WINDOWS * n // STRIDE * n * flops_per_token(n) for n in LENGTHS)
    assert tokens == 30_720_000
    assert chapter_outputs.glued(NB, "ar_tokens") == f"{tokens:,}"
    assert chapter_outputs.glued(NB, "ar_pflop") == f"{non / 1e15:,.1f}"
    assert chapter_outputs.glued(NB, "ar_slide_x") == f"{slid / non:,.0f}"
    assert chapter_outputs.glued(NB, "ar_runs") == f"{RUNS}"
    assert chapter_outputs.glued(NB, "ar_runs_slide") == f"{RUNS * slid / 1e15:,.0f}"
    assert (f"{len(REACH)} arms x {SEEDS} seeds = {RUNS} models: {RUNS * non / 1e15:,.0f} PFLOP non-overlapping, "
            f"{RUNS * slid / 1e15:,.0f} PFLOP sliding") in OUT
    assert 40 < slid / non < 64  # between the stride ratios at 4L and 8L, weighted toward 8L
    head = 2 * D * VOCAB  # logits of one token
    slid_lo = sum(WINDOWS * n // STRIDE * n * (flops_per_token(n) - head) + WINDOWS * n * head for n in LENGTHS)
    assert chapter_outputs.glued(NB, "ar_slide_x_lo") == f"{slid_lo / non:,.0f}"
    assert f"{slid_lo / 1e15:,.0f} PFLOP, {slid_lo / non:,.0f}x" in OUT
    assert slid_lo < slid  # the full-logits price is an upper bound


def test_grid_marks_which_lengths_each_arm_was_trained_or_scaled_for():
    for arm, reach in REACH.items():
        cells = ["trained" if n == L else "scaled" if n <= reach * L else "past L" for n in LENGTHS]
        assert re.search(rf"^{re.escape(arm)}\s+" + r"\s+".join(map(re.escape, cells)) + "$", OUT, re.M), arm
