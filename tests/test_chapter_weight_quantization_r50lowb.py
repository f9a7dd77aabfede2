"""weight_quantization r50: why low precision works at all (weight_quantization-why-low-bits-work).

Recomputed here without the chapter's quantizer: a plain numpy absmax rounding of the same seeded rows, the
uniform-error variance Delta^2/12 from its integral, the sqrt(d) prediction for a dot product, the trace rule
E[1/2 d^T H d] = (Delta^2/24) tr(H) on the chapter's spectrum, and the outlier's effect on the step
(Nagel et al. 2021 §2.2; AdaRound §2, §3.2).
"""
import re

import numpy as np

from tests.chapter_outputs import assert_cited, book_labels, glued, notebook, printed, section

NB = notebook("weight_quantization")
LABEL = "weight_quantization-why-low-bits-work"


def _rows():
    rng = np.random.default_rng(50)  # the chapter's draws, in its order
    d, trials = 4096, 250
    w = rng.normal(0, 1, size=(trials, d))
    x_free = rng.normal(0, 1, size=(trials, d))
    x_fire = w + rng.normal(0, 1, size=(trials, d))
    return w, x_free, x_fire


def _round_rows(w, bits):
    top = 2 ** (bits - 1) - 1
    step = np.abs(w).max(axis=1, keepdims=True) / top
    return np.clip(np.rint(w / step), -top, top) * step, step[:, 0]


def _rel(e, w, x):
    return np.sqrt(np.mean(np.sum(e * x, 1) ** 2) / np.mean(np.sum(w * x, 1) ** 2))


def test_uniform_error_variance_is_step_squared_over_twelve():
    step = 0.7
    mid = (np.arange(200_000) + 0.5) / 200_000 * step - step / 2  # midpoints of the interval [-step/2, step/2]
    assert abs(np.mean(mid ** 2) - step ** 2 / 12) < 1e-9


def test_table_recomputed_with_plain_rounding():
    w, x_free, x_fire = _rows()
    out = printed(NB, "x_fire = w +")
    for bits in (8, 4):
        wq, step = _round_rows(w, bits)
        e = wq - w
        var_ratio = np.mean(e ** 2 / (step[:, None] ** 2 / 12))
        assert abs(var_ratio - 1) < 0.01  # the uniform model holds at int4 too, step ~0.55 sigma
        predicted = np.sqrt(np.mean(4096 * step ** 2 / 12 * np.mean(x_free ** 2, axis=1)))
        ratio = np.sqrt(np.mean(np.sum(e * x_free, 1) ** 2)) / predicted
        assert abs(ratio - 1) < 0.1  # 250 trials: a few percent of sampling noise
        row = re.search(rf"int{bits}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)%", out).groups()
        assert abs(float(row[0]) - step.mean()) < 0.001
        assert abs(float(row[1]) - var_ratio) < 0.002 and abs(float(row[2]) - ratio) < 0.002
        assert abs(float(row[3]) / 100 - _rel(e, w, x_free)) < 0.0002
        assert abs(float(row[4]) / 100 - _rel(e, w, x_fire)) < 0.00002
    # int4 step from the expected maximum of 4,096 standard normals (~3.8) over 7 levels
    assert glued(NB, "lb50_step4") == "0.54" and abs(3.82 / 7 - 0.545) < 0.002
    assert glued(NB, "lb50_free4") == "16%" and glued(NB, "lb50_free8") == "0.84%"


def test_aligned_error_falls_like_one_over_sqrt_d():
    w, x_free, x_fire = _rows()
    fire = {}
    for n in (256, 1024, 4096):
        wq, _ = _round_rows(w[:, :n], 4)
        e = wq - w[:, :n]
        fire[n] = _rel(e, w[:, :n], x_fire[:, :n])
        free = _rel(e, w[:, :n], x_free[:, :n])
        assert free > 10 * fire[n]  # unrelated inputs: no 1/sqrt(d) gain
    assert 3 < fire[256] / fire[4096] < 4.5  # sqrt(4096/256) = 4, less the coarser step of longer rows
    assert glued(NB, "lb50_fire4_256") == f"{fire[256]:.1%}" == "1.1%"
    assert glued(NB, "lb50_fire4") == f"{fire[4096]:.2%}"


def test_outlier_multiplies_the_others_error():
    w, _, _ = _rows()
    w_out = w.copy()
    w_out[:, 0] = 20.0
    base = (_round_rows(w, 4)[0] - w)[:, 1:]
    grow = np.mean((_round_rows(w_out, 4)[0] - w_out)[:, 1:] ** 2) / np.mean(base ** 2)
    assert glued(NB, "lb50_outlier") == f"{grow:.0f}" == "24"
    assert 20 < grow < (20 / 3.8) ** 2  # below the step ratio squared: at a 2.9-sigma step the error is no longer uniform


def test_trace_rule_and_spectrum_shares():
    lam = np.logspace(2, -2, 1024)
    assert glued(NB, "lb50_sharp") == f"{lam[:10].sum() / lam.sum():.0%}" == "9%"
    assert glued(NB, "lb50_flat_half") == f"{lam[512:].sum() / lam.sum():.2%}" == "0.99%"
    out = printed(NB, "trace_rule =")
    sampled, rule = map(float, re.search(r"sampled ([\d.]+), \(step\^2/24\) tr\(H\) ([\d.]+)", out).groups())
    step4 = float(re.search(r"int4\s+([\d.]+)", printed(NB, "x_fire = w +")).group(1))
    assert abs(rule - step4 ** 2 / 24 * lam.sum()) / rule < 0.005
    assert abs(sampled / rule - 1) < 0.02 and glued(NB, "lb50_mc_ratio") == "1.00"
    assert "x 10,000" in out  # lambda_max / lambda_min over four decades


def test_section_cites_and_links():
    text = section(NB, LABEL, "weight_quantization-fp32-int8-cpp")
    assert_cited(text, ["nagel2021whitepaper", "nagel2020adaround", "wikiquantization", "dong2020hawqv2"])
    refs = set(re.findall(r"\{ref\}`([\w.-]+)`", text))
    assert {"weight_quantization-arithmetic", "weight_quantization-qat-qad", "weight_quantization-llm-int8",
            "weight_quantization-gptq-derivation"} <= refs
    assert refs <= book_labels()
    assert "In the interview" in text and "Drill:" in text


def _round_groups(w, bits, g):
    rows = w.reshape(-1, g)  # one absmax scale per g consecutive weights of a row
    return _round_rows(rows, bits)[0].reshape(w.shape)


def test_review_fixes_drill_groups_two_bits_and_outlier_zeros():
    w, _, x_fire = _rows()
    d = w.shape[1]
    absmax, top = np.abs(w).max(axis=1).mean(), w.max(axis=1).mean()
    assert glued(NB, "lb50_absmax") == f"{absmax:.1f}" == "3.8" and glued(NB, "lb50_max") == f"{top:.1f}" == "3.6"
    s4, s8 = _round_rows(w, 4)[1].mean(), _round_rows(w, 8)[1].mean()
    assert glued(NB, "lb50_finer") == f"{s4 / s8:.0f}" == "18" and glued(NB, "lb50_rms4") == f"{s4 / np.sqrt(12):.0%}"
    pw = {}
    for bits in (4, 2):
        for g, wq in (("row", _round_rows(w, bits)[0]), ("g128", _round_groups(w, bits, 128))):
            pw[bits, g] = (np.sqrt(np.mean((wq - w) ** 2)) / w.std(), np.mean(wq == 0))
    assert glued(NB, "lb50_pw4_row") == f"{pw[4, 'row'][0]:.1%}" and glued(NB, "lb50_pw4_g128") == f"{pw[4, 'g128'][0]:.1%}"
    assert pw[4, "g128"][0] < 0.8 * pw[4, "row"][0]  # groups of 128: a smaller maximum, a finer step
    assert glued(NB, "lb50_pw2_row") == f"{pw[2, 'row'][0]:.0%}" and glued(NB, "lb50_pw2_g128") == f"{pw[2, 'g128'][0]:.0%}"
    assert glued(NB, "lb50_zero2_row") == f"{pw[2, 'row'][1]:.0%}" and glued(NB, "lb50_zero2_g128") == f"{pw[2, 'g128'][1]:.0%}"
    assert pw[2, "g128"][1] > 0.75 and pw[2, "g128"][0] > 0.5  # 2 bits: most weights become 0, no small-noise regime
    assert glued(NB, "lb50_zero4") == f"{pw[4, 'row'][1]:.0%}"
    cos = np.mean(np.sum(w * x_fire, 1) / np.linalg.norm(w, axis=1) / np.linalg.norm(x_fire, axis=1))
    assert abs(cos - np.sqrt(0.5)) < 0.01 and glued(NB, "lb50_cos") == f"{cos:.2f}"
    pred = pw[4, "row"][0] / (np.sqrt(d) * cos)
    assert glued(NB, "lb50_fire4_pred") == f"{pred:.2%}"
    measured = _rel(_round_rows(w, 4)[0] - w, w, x_fire)
    assert 0.8 < measured / pred < 1.05  # same order as r / (sqrt(d) cos); not the naive r / sqrt(d)
    w_out = w.copy()
    w_out[:, 0] = 20.0
    zero = np.mean(_round_rows(w_out, 4)[0][:, 1:] == 0)
    assert glued(NB, "lb50_outlier_zero") == f"{zero:.0%}" and zero > 0.8
    assert glued(NB, "lb50_outlier_naive") == f"{(20 / 7 / s4) ** 2:.1f}" and glued(NB, "lb50_outlier_step") == "2.9"


def test_review_fixes_spectrum_shares_and_citations():
    lam = np.logspace(2, -2, 1024)
    assert glued(NB, "lb50_sharp10") == f"{lam[:102].sum() / lam.sum():.0%}" == "60%"
    assert glued(NB, "lb50_sharp_x") == f"{lam[:10].sum() / lam.sum() / 0.01:.0f}" == "9"
    text = section(NB, LABEL, "weight_quantization-fp32-int8-cpp")
    assert_cited(text, ["sagun2017hessian", "liu2023oscillationfree", "liu2025paretoq"])
    assert "tseng2024quipsharp" in text
    assert "carry most of the curvature" not in text and "no longer moves" not in text
    assert "weight_quantization-scale-granularity" in text and "weight_quantization-bitnet" in text
