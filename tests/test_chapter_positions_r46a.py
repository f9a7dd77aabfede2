"""Section positions-rope-desiderata of "Where positions come from": the properties of a position encoding.

Recomputed without mha_kit: scores of one query and one key rotated by hand (half-split pairs,
theta_i = 10000 ** (-2i / 64), RoFormer §3.2.2), for the table's relative and symmetry rows.
"""
import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("positions")
SECTION = chapter_outputs.section(NB, "positions-rope-desiderata", end="positions-add-vs-concat")
THETA = 10000.0 ** (-np.arange(32) * 2.0 / 64)


def score(q, k, m, n):
    def rot(x, p):
        c, s = np.cos(p * THETA), np.sin(p * THETA)
        return np.concatenate([x[:32] * c - x[32:] * s, x[:32] * s + x[32:] * c])
    return float(rot(q, m) @ rot(k, n))


def test_relative_and_symmetry_rows_hold():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal(64), rng.standard_normal(64)
    d3 = [score(q, k, m, n) for m, n in [(5, 2), (105, 102), (10_005, 10_002)]]
    assert np.allclose(d3, d3[0], atol=1e-9)
    assert chapter_outputs.glued(NB, "rope_score_d3") == f"{d3[0]:+.4f}"
    dm3 = score(q, k, 2, 5)
    assert not np.isclose(dm3, d3[0])  # with q != k, +3 and -3 differ: content reads direction
    assert chapter_outputs.glued(NB, "rope_score_dm3") == f"{dm3:+.4f}"
    self_p, self_m = score(q, q, 5, 2), score(q, q, 2, 5)  # one vector against itself: the position code
    assert np.isclose(self_p, self_m, atol=1e-9)
    kernel = float(((q[:32] ** 2 + q[32:] ** 2) * np.cos(3 * THETA)).sum())  # sum_i (a_i^2 + b_i^2) cos(d theta_i)
    assert np.isclose(self_p, kernel)
    assert chapter_outputs.glued(NB, "rope_self_pm3") == f"{kernel:+.4f}"
    assert "| Symmetric | as a position code, yes" in SECTION and "asymmetric, so direction shows" not in SECTION


def test_decay_row_is_not_monotone():
    ones = np.ones(128)
    theta = 10000.0 ** (-np.arange(64) * 2.0 / 128)
    s = [2 * np.cos(t * theta).sum() for t in range(1001)]
    rises = int((np.diff(s) > 0).sum())
    assert chapter_outputs.glued(NB, "rope_rises") == str(rises) and 0 < rises < 1000
    assert ones.sum() == s[0]


def test_table_rows_cited_and_linked():
    chapter_outputs.assert_cited(SECTION, ["wang2021posbert", "su2021roformer", "press2022alibi"])
    for label in ("positions-rope-decay-proof", "positions-rope-cache", "rope_scaling-past-length",
                  "positions-sinusoidal-unique", "rope_scaling-rope-vs-alibi", "positions-rope-fp32"):
        assert "{ref}`" + label + "`" in SECTION, label
    assert SECTION.count("\n| ") >= 9  # header, rule and eight property rows
