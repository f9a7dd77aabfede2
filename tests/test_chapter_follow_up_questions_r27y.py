"""Section follow_up_questions-variance-derivation of "Follow-up questions".

The asker's 2x2 experiment (four scores of d_k = 2 products, np.var) and the sample variance's spread as the
number of scores grows: the means and standard deviations checked against closed forms (the bias (n - 1)/n and
Var(s^2) = (mu_4 - sigma^4 (n - 3)/(n - 1)) / n with mu_4 = 24 for q1 k1 + q2 k2), and the printed lines recomputed
with the chapter's seed, written here with its own loops.
"""
import math
import re

import numpy as np
import chapter_outputs

NB = chapter_outputs.notebook("follow_up_questions")
D_K, MU4 = 2, 2 * 9 + 6  # E[(q k)^4] = 3 * 3 per term, 6 * 1 * 1 for the cross term


def var_of_sample_var(n):
    return (MU4 - D_K**2 * (n - 3) / (n - 1)) / n


def test_fourth_moment_by_quadrature():
    # E[s^4] for s = q1 k1 + q2 k2 by Gauss-Hermite quadrature over the four normal entries
    x, w = np.polynomial.hermite_e.hermegauss(12)
    w = w / w.sum()
    g = np.meshgrid(x, x, x, x, indexing="ij")
    wt = np.einsum("i,j,k,l->ijkl", w, w, w, w)
    s = g[0] * g[1] + g[2] * g[3]
    assert math.isclose((wt * s**4).sum(), MU4, rel_tol=1e-9)
    assert math.isclose((wt * s**2).sum(), D_K, rel_tol=1e-9)


def test_two_by_two_experiment():
    out = chapter_outputs.printed(NB, "the asker's experiment")
    rows = re.findall(r"mean (\S+)  median (\S+)  10th-90th (\S+) to (\S+)  share at or below 1.6: (\d+)%", out)
    assert len(rows) == 2
    biased, unbiased = [tuple(float(v) for v in r) for r in rows]
    assert abs(biased[0] - 0.75 * D_K) < 0.03 and abs(unbiased[0] - D_K) < 0.04  # (n-1)/n bias, n = 4
    assert biased[4] > 50 and biased[2] < 0.2 and biased[3] > 3.5  # 1.6 sits inside the bulk
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 100_000, 2, D_K))
    s = np.einsum("tid,tjd->tij", q, k).reshape(100_000, 4)
    for r, ddof in ((biased, 0), (unbiased, 1)):
        v = s.var(axis=1, ddof=ddof)
        assert r[0] == round(v.mean(), 2) and r[1] == round(np.median(v), 2)
        assert (r[2], r[3]) == tuple(round(p, 2) for p in np.percentile(v, [10, 90]))
        assert r[4] == round(100 * (v <= 1.6).mean())
    assert chapter_outputs.glued(NB, "fu_var_share16") == f"{biased[4]:.0f}%"
    assert chapter_outputs.glued(NB, "fu_var_share16_n1") == f"{unbiased[4]:.0f}%"
    assert chapter_outputs.glued(NB, "fu_var_med0") == f"{biased[1]:.2f}"
    assert chapter_outputs.glued(NB, "fu_var_mean0") == f"{biased[0]:.2f}"
    assert chapter_outputs.glued(NB, "fu_var_med1") == f"{unbiased[1]:.2f}"
    v0 = s.var(axis=1)
    assert chapter_outputs.glued(NB, "fu_var_p10") == f"{np.percentile(v0, 10):.1f}"
    assert chapter_outputs.glued(NB, "fu_var_p90") == f"{np.percentile(v0, 90):.1f}"
    assert biased[1] < 0.6 * biased[0] and unbiased[1] < 0.6 * unbiased[0]  # right skew: median well below mean
    assert unbiased[4] > 50  # even divided by n - 1, most runs land at or below 1.6


def test_convergence_with_more_scores():
    out = chapter_outputs.printed(NB, "scores per experiment")
    rows = re.findall(r"n=\s*([\d,]+): mean (\S+)  10th-90th (\S+) to (\S+)  std (\S+)  \(formula (\S+)\)", out)
    assert [int(r[0].replace(",", "")) for r in rows] == [4, 32, 256, 2048]
    rng = np.random.default_rng(0)
    rng.standard_normal((2, 100_000, 2, D_K))  # the 2x2 cell's draws come first from the same generator
    widths = []
    for n, mean, p10, p90, std, formula in rows:
        n = int(n.replace(",", ""))
        assert formula == f"{math.sqrt(var_of_sample_var(n)):.3f}"
        assert abs(float(mean) - D_K) < 4 * math.sqrt(var_of_sample_var(n) / 1000)
        if n >= 32:  # 1,000 experiments pin the spread to a few per cent of the closed form
            assert abs(float(std) / math.sqrt(var_of_sample_var(n)) - 1) < 0.1
        q, k = rng.standard_normal((2, 1_000, n, D_K))
        s = np.einsum("end,end->en", q, k)
        v = ((s - s.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) / (n - 1)
        assert (mean, p10, p90, std) == (f"{v.mean():.2f}", f"{np.quantile(v, 0.1):.2f}",
                                         f"{np.quantile(v, 0.9):.2f}", f"{v.std():.3f}")
        widths.append(float(p90) - float(p10))
    assert all(a > b for a, b in zip(widths, widths[1:]))
    assert all(2 < a / b < 4 for a, b in zip(widths[1:], widths[2:]))  # 8x the scores, about sqrt(8) narrower
    inside = [1.8 <= float(r[2]) and float(r[3]) <= 2.2 for r in rows]  # the follow-up's +-10% band
    assert inside == [False, False, False, True]  # 820 scores needed: 256 falls short, 2,048 is enough
    assert math.isclose(500 * 1.28**2, 819.2) and math.isclose(5 / (0.2 / 2) ** 2, 500)  # 2 sqrt(5/n) = 0.2 at n = 500


def test_section_links():
    text = chapter_outputs.section(NB, "follow_up_questions-variance-derivation", end="follow_up_questions-t5-init")
    for ref in ("follow_up_questions-scale", "softmax_numerics-qk-norm", "follow_up_questions-t5-init",
                "common_mistakes-scale"):
        assert f"{{ref}}`{ref}`" in text
    assert "vaswani2017attention{§3.2.1, footnote 4}" in text
    for key in ("olmo2{§3}", "gemma3report{§2}", "qwen3report{§2}"):
        assert f"{{cite:p}}`{key}`" in text
    assert "is only another way of setting the starting scale" in text  # an init does not bound later logits
