"""Section attention_cost-flash-limits of "What attention costs".

Recomputed from the formulas, not through mha_kit: standard attention's HBM traffic is 4nd + 4n^2 elements
(arXiv:2205.14135, §3.2, Algorithm 0); FlashAttention-2's forward (arXiv:2307.08691, §3.1, Algorithm 1) loads
each query block once, reads K and V once per query block, writes O once and one log-sum-exp per row. The floor
reads Q, K, V and writes O once. A decode row against s keys saves only the 4s of one row of S and P.
"""
import pytest

import chapter_outputs

D, TILE = 128, 128  # the section's head size and tile
NB = chapter_outputs.notebook("attention_cost")


def naive(n):
    return 4 * n * D + 4 * n * n


def fa2_upper(n):  # Q once, K and V once per query block, O once, one log-sum-exp per row
    return n * D + 2 * -(-n // TILE) * n * D + n * D + n


def fa2_floor(n):
    return 4 * n * D + n


def test_counts_printed():
    text = chapter_outputs.printed(NB, "fl_rows = {}")
    for n in (256, 1024, 4096, 16384, 131072):
        line = next(row for row in text.splitlines() if row.startswith(f"n = {n:>7,}"))
        assert f"naive / FA2 = {naive(n) / fa2_upper(n):.2f} to {naive(n) / fa2_floor(n):,.1f}" in line


def test_exact_counts():
    assert naive(256) * 2 == 786_432  # 768 KiB in bf16
    assert fa2_floor(131072) == 67_239_936
    assert naive(131072) == 68_786_585_600


@pytest.mark.parametrize("key, value", [
    ("cost_fal_ratio_256", f"{naive(256) / fa2_floor(256):.1f}"),
    ("cost_fal_ratio_128k", f"{naive(131072) / fa2_floor(131072):,.0f}"),
    ("cost_fal_ratio_upper", f"{naive(131072) / fa2_upper(131072):.2f}"),
])
def test_glued_ratios(key, value):
    assert chapter_outputs.glued(NB, key) == value


def test_ratio_grows_with_n_against_floor():
    ratios = [naive(n) / fa2_floor(n) for n in (256, 1024, 4096, 16384, 131072)]
    assert ratios == sorted(ratios) and ratios[0] < 4 and ratios[-1] > 1000
    assert all(abs(naive(n) / fa2_upper(n) - 2) < 0.01 for n in (256, 131072))  # 2 * TILE / D


def test_scores_at_128k_do_not_fit():
    scores = 131072 * 131072 * 2  # one head's n x n scores in bf16, bytes
    assert scores == 32 * 2**30
    assert chapter_outputs.glued(NB, "cost_fal_scores_128k") == f"{scores // 2**30} GiB"
    assert chapter_outputs.glued(NB, "cost_fal_scores_layer") == f"{64 * scores // 2**40} TiB" == "2 TiB"  # Llama 3 70B: 64 heads
    assert chapter_outputs.glued(NB, "cost_fal_layer_heads") == "64"


def test_box_does_not_call_the_floor_the_saving():
    text = " ".join("".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown")
    text = " ".join(text.split())
    assert "The saving against reading" not in text
    assert "Turing users are pointed to FlashAttention 1.x" not in text
    assert "backward head dimensions up to 128" not in text
    assert "fp32 on the CUDA build" in text


def test_decode_saves_under_two_percent():
    s = 131072
    ratio = (2 * D + 2 * s * D + 4 * s) / (2 * D + 2 * s * D + 1)
    assert 1 < ratio < 1 + 2 / D + 1e-4
    assert chapter_outputs.glued(NB, "cost_fal_decode") == f"{ratio:.3f}" == "1.016"
