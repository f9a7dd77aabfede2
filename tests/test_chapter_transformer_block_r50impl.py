"""Section transformer_block-layernorm-by-hand: LayerNorm's biased variance against torch.var's default correction=1.

Recomputed with explicit sums (not np.var) on the same seeded rows: the unbiased variance is the biased one times
d/(d-1) (torch.var: divisor max(0, N - correction)); nn.LayerNorm's eps inside the square root; assert_close's default
(rtol, atol) of torch/testing/_comparison.py: float32 (1.3e-6, 1e-5), bfloat16 (0.016, 1e-5).
"""
import math

import numpy as np

from tests.chapter_outputs import glued, notebook, printed, section

NB = notebook("transformer_block")
EPS = 1e-5


def _ln(row, divisor_offset):
    d = row.size
    mu = sum(float(v) for v in row) / d
    ss = sum((float(v) - mu) ** 2 for v in row)
    return [(float(v) - mu) / math.sqrt(ss / (d - divisor_offset) + EPS) for v in row]


def test_relative_differences_and_tolerances():
    out = printed(NB, "def ln_hand(")
    for d in (8, 4096):
        row = np.random.default_rng(50).standard_normal((1, d))[0]
        right, wrong = _ln(row, 0), _ln(row, 1)
        rel = max(abs(a - b) for a, b in zip(wrong, right)) / max(abs(b) for b in right)
        closed = 1 - math.sqrt((d - 1) / d)
        assert abs(rel - closed) / closed < 0.01
        fp32 = all(abs(a - b) <= 1e-5 + 1.3e-6 * abs(b) for a, b in zip(wrong, right))
        bf16 = all(abs(a - b) <= 1e-5 + 0.016 * abs(b) for a, b in zip(wrong, right))
        assert (f"d = {d:>4}: relative difference {rel:.3e} (1 - sqrt((d-1)/d) = {closed:.3e}); "
                f"passes assert_close as fp32: {fp32}, as bf16: {bf16}") in out
        assert glued(NB, f"tb_lnh_rel_{d}") == f"{rel:.2e}"
    assert glued(NB, "tb_lnh_rel_8") == "6.46e-02" and glued(NB, "tb_lnh_rel_4096") == "1.22e-04"
    assert "d = 4096" in out and "as fp32: False, as bf16: True" in out


def test_eps_placement_on_a_flat_row():
    flat = 5.0 + 1e-3 * np.random.default_rng(51).standard_normal((1, 4096))[0]
    mu = sum(float(v) for v in flat) / flat.size
    sd = math.sqrt(sum((float(v) - mu) ** 2 for v in flat) / flat.size)
    centred = [float(v) - mu for v in flat]
    out_sd = lambda ys: math.sqrt(sum(y * y for y in ys) / len(ys) - (sum(ys) / len(ys)) ** 2)  # noqa: E731
    inside = out_sd([c / math.sqrt(sd * sd + EPS) for c in centred])
    outside = out_sd([c / (sd + EPS) for c in centred])
    assert glued(NB, "tb_lnh_inside") == f"{inside:.3f}" and glued(NB, "tb_lnh_outside") == f"{outside:.3f}"
    assert abs(inside - sd / math.sqrt(sd * sd + EPS)) < 1e-9


def test_section_cites_and_form():
    text = section(NB, "transformer_block-layernorm-by-hand", "transformer_block-rmsnorm")
    for key in ("pytorchnnlayernorm", "pytorchtorchvar", "numpyvar", "annotatedtransformer{LayerNorm.forward}",
                "pytorchtesting", "hfllamarmsnorm", "pytorchlayernormcuda", "softmax_numerics-rmsnorm-fp32"):
        assert key in text
    assert "In the interview" in text and text.count(":class: dropdown\n") == 1
    assert "6.5% at $d = 8$ and 1.2e-4 at 4096" in text
    assert round(100 * (1 - math.sqrt(7 / 8)), 1) == 6.5 and f"{1 - math.sqrt(4095 / 4096):.1e}" == "1.2e-04"


def test_design_not_bug_and_third_trap_linked():
    text = section(NB, "transformer_block-layernorm-by-hand", "transformer_block-rmsnorm")
    assert "fallen into" not in text and "by design rather than by bug" in text
    assert "$\\epsilon = 10^{-6}$" in text  # the Annotated Transformer's eps, not the cell's 1e-5
    assert "{ref}`transformer_block-norm-kernel`" in text and "{ref}`transformer_block-pre-post-norm`" in text
