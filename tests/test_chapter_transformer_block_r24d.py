"""Section transformer_block-norm-newton: LayerNorm with vector add, sub and mul only (no sqrt, no comparison).

Recomputed here without the chapter's functions: the bit guess from Python integers (struct), the Newton
errors from the error recursion e' = -3/2 e^2 - 1/2 e^3 in float64, the step counts of the comparison-free
starts from the worst case of each start (the map t -> t (3 - t^2) / 2 and Heron's map in float64), the
LayerNorm with numpy's pairwise sums and 1 / np.sqrt, and the one-pass variance's quantisation.
"""
import json
import math
import re
import struct

import numpy as np
import pytest

import chapter_outputs

NB = chapter_outputs.notebook("transformer_block")
LABEL = "(transformer_block-norm-newton)="
TOL = 2.0 ** -21
U = 2.0 ** -24  # float32 unit roundoff


def glued(key):
    return chapter_outputs.glued(NB, key)


def guess(x, magic=0x5F3759DF):
    """The Quake III guess from the float's bits, in Python integers."""
    i = struct.unpack("<I", struct.pack("<f", x))[0]
    return struct.unpack("<f", struct.pack("<I", (magic - (i >> 1)) & 0xFFFFFFFF))[0]


def guess_errors(magic, samples=1 << 16):
    """Largest relative error of the guess over [1, 4) (float32 mantissas sampled evenly), and after 1, 2 steps."""
    worst = [0.0, 0.0, 0.0]
    for j in range(samples):
        bits = 0x3F800000 + j * ((0x40800000 - 0x3F800000) // samples)
        x = struct.unpack("<f", struct.pack("<I", bits))[0]
        e = guess(x, magic) * math.sqrt(x) - 1
        for k in range(3):
            worst[k] = max(worst[k], abs(e))
            e = -1.5 * e * e - 0.5 * e ** 3
    return worst


def t_map_steps(t, tol=TOL):
    k = 0
    while abs(t - 1) >= tol:
        t, k = t * (3 - t * t) / 2, k + 1
    return k


def heron_steps(sigma, tol=TOL):  # sigma = s / sqrt(x); the answer is 1 / s
    k = 0
    while abs(1 / sigma - 1) >= tol:
        sigma, k = (sigma + 1 / sigma) / 2, k + 1
    return k


def section():
    return chapter_outputs.section(NB, LABEL[1:-2], end="transformer_block-ffn")


def test_place_boxes_and_citations():
    text = section()  # up to the feed-forward section, with no other anchor between
    assert re.findall(r"^\([\w-]+\)=$", text, re.M) == [LABEL]
    cells = ["".join(c["source"]) for c in NB["cells"]]
    start = next(i for i, s in enumerate(cells) if s.startswith(LABEL))
    assert any(c.startswith("(transformer_block-norm-kernel)=") for c in cells[start - 3:start])
    assert text.count("```{admonition} In the interview") == 1
    assert text.count(":class: dropdown\n") == 3 and "followup" not in text
    assert text.count("**Strong answer.**") == text.count("**Listening for.**") == text.count("**Trap.**") == 3
    for key in ("quake3qmath", "moroz2016magic", "hnlomontconstants", "ascendclayernormapi", "higham1993accuracy",
                "ascendcrsqrtapi", "rustx86rsqrt", "unityneonrsqrt"):
        assert f"`{key}" in text
    assert "{ref}`transformer_block-norm-kernel`" in text and "{ref}`gpu_kernels-sfu`" in text
    # the review's corrections stay corrected
    assert "the one root whose Newton step is" not in text and "adds one to the guess's exponent" not in text
    assert "silently zeroes the row" not in text and "best after Newton steps" not in text
    assert "exponent drops by one" in text and "$y(2 - xy)$" in text


def test_period_four_halves_the_guess():
    g = [guess(x) for x in (1.0, 4.0, 16.0)]
    assert g[1] == g[0] / 2 and g[2] == g[0] / 4  # x * 4 -> the guess's exponent drops by one, exactly


def test_correction_form_and_hardware_estimates():
    # two float32 Newton steps from the bit guess, then the third as y + y (1/2 - x/2 y^2) in float64, rounded once
    x = (np.arange(0x3F800000, 0x40800000, 97, dtype=np.int64).astype(np.uint32)).view(np.float32)
    y = (np.int32(0x5F3759DF) - (x.view(np.int32) >> 1)).view(np.float32)
    hx = np.float32(0.5) * x
    for _ in range(2):
        y = y * (np.float32(1.5) - hx * y * y)
    y, x64 = y.astype(np.float64), x.astype(np.float64)
    sampled = float(np.max(np.abs((y + y * (0.5 - 0.5 * x64 * y * y)).astype(np.float32) * np.sqrt(x64) - 1))) / U
    corr3, ulp3 = float(glued("tb_nr_corr3")), float(glued("tb_nr_ulp3"))
    assert sampled <= corr3 + 0.05 and corr3 < 1.5 < ulp3  # below the three-product form's floor
    assert glued("tb_nr_hw1") == f"{1.5 * (1.5 * 2.0 ** -12) ** 2 / U:.1f}"
    assert glued("tb_nr_hw14") == f"{1.5 * 2.0 ** -28 / U:.2f}"
    assert 1.5 * (1.5 * 2.0 ** -12) ** 2 < 4 * U < guess_errors(0x5F3759DF, samples=1 << 10)[2]  # one step vs two


def test_quake_constant_is_the_exponent_bias_less_a_correction():
    assert int(1.5 * 127 * 2 ** 23) == 0x5F400000
    assert 0 < 0x5F400000 - 0x5F3759DF < 2 ** 23 // 8  # a correction within the mantissa bits, under an eighth of one exponent step


def test_guess_and_newton_errors():
    quake, best_guess, best_newton = (guess_errors(m) for m in (0x5F3759DF, 0x5F37642F, 0x5F375A86))
    assert glued("tb_nr_err0") == f"{100 * quake[0]:.2f}%"
    assert glued("tb_nr_every") == f"{-(-2 ** 24 // 7):,}" == "2,396,746"  # every seventh of the 2^24 floats of [1, 4)
    assert glued("tb_nr_lomont0") == f"{100 * best_guess[0]:.2f}%"
    assert best_guess[0] < quake[0] and best_newton[1] < quake[1]  # the two alternatives' claims
    assert float(glued("tb_nr_err1")) == pytest.approx(quake[1], rel=2e-3)
    assert float(glued("tb_nr_err2")) == pytest.approx(quake[2], abs=3 * U)  # plus the float32 rounding of 2 steps
    err3 = float(glued("tb_nr_err3"))
    assert 1.5 * quake[2] ** 2 < U < err3 < 4 * U  # three steps reach the float32 rounding floor, not the maths
    assert float(glued("tb_nr_np")) < 1.5 * U * 1.01 + 1e-12  # 1 / np.sqrt in float32: two roundings
    assert abs(float(glued("tb_nr_bits2")) + math.log2(quake[2])) < 0.1
    # one step is within bf16's unit roundoff, two within fp16's, as the text says
    assert quake[1] < 2.0 ** -8 and quake[0] > 2.0 ** -8 and quake[2] < 2.0 ** -11 < quake[1]


def test_convergence_region_printed():
    ends = []
    for t in (0.01, 0.5, 1.7, 1.74, 2.0, 2.3):
        for _ in range(60):
            t = t * (3 - t * t) / 2 if math.isfinite(t) else t
        ends.append(t)
    assert [round(v) if math.isfinite(v) else v for v in ends[:5]] == [1, 1, 1, -1, -1] and math.isinf(ends[5])
    line = chapter_outputs.printed(NB, "def newton_rsqrt(").splitlines()[-1]
    assert line.endswith("after 60 steps: 1, 1, 1, -1, -1, inf")
    assert math.sqrt(3) < 1.74 and 1.7 < math.sqrt(3)
    text = chapter_outputs.printed(NB, "def newton_rsqrt(")
    t0 = 2.0
    for _ in range(60):  # the real root of t^3 - 3t - 4 = 0, where g(t) = -2
        t0 -= (t0 ** 3 - 3 * t0 - 4) / (3 * t0 ** 2 - 3)
    assert abs(t0 * (3 - t0 * t0) / 2 + 2) < 1e-12 and (-2) * (3 - 4) / 2 == 1
    assert f"t0 = {t0:.4f}: first steps -2, 1, 1, 1; after 60 steps 1" in text
    assert "t0 = 2.2361: first steps -2.236, 2.236, -2.236, 2.236; after 60 steps inf" in text


@pytest.mark.parametrize("R", [1e1, 1e2, 1e3, 1e6])
def test_comparison_free_start_step_counts(R):
    const = t_map_steps(1 / R)  # y0 = 1/sqrt(R) at x = 1/R, the worst point of the range
    amgm = t_map_steps(2 * math.sqrt(R) / (1 + R))  # y0 = 2 / (1 + x) at either end
    heron = heron_steps((1 + R) / (2 * math.sqrt(R)))  # s0 = (1 + x) / 2 at either end
    bits = t_map_steps(1 - 0.0344)  # the bit guess's worst error, any range
    text = chapter_outputs.printed(NB, "def steps_until(")
    row = next(line for line in text.splitlines() if line.startswith(f"R = {R:<12g}"))
    assert [int(n) for n in row.split()[3:]] == [const, amgm, heron, bits]
    if R == 1e6:
        r_ln = math.sqrt(1e4 / 1e-5)
        assert glued("tb_nr_R_ln") == f"{r_ln:,.0f}"
        assert (glued("tb_nr_const_ln"), glued("tb_nr_amgm_ln")) == (
            str(t_map_steps(1 / r_ln)), str(t_map_steps(2 * math.sqrt(r_ln) / (1 + r_ln))))
        assert (glued("tb_nr_const_6"), glued("tb_nr_amgm_6"), glued("tb_nr_heron_6")) == (
            str(const), str(amgm), str(heron))


def test_layer_norm_error_against_float64():
    rng = np.random.default_rng(24)
    m, d = 48, 4096
    x = (rng.standard_normal((m, d)) * np.logspace(-3, 3, m)[:, None]).astype(np.float32)
    gamma = rng.uniform(0.5, 2.0, d).astype(np.float32)
    beta = rng.standard_normal(d).astype(np.float32)
    x64 = x.astype(np.float64)
    dev64 = x64 - x64.mean(-1, keepdims=True)
    ref = dev64 / np.sqrt((dev64 ** 2).mean(-1, keepdims=True) + 1e-5) * gamma + beta
    scale = np.max(np.abs(dev64 / np.sqrt((dev64 ** 2).mean(-1, keepdims=True) + 1e-5) * gamma))
    quake = guess_errors(0x5F3759DF, samples=1 << 12)
    # an rsqrt error e moves the output by at most e times the largest normalised, scaled value
    for k, e in ((1, quake[1]), (2, quake[2])):
        assert float(glued(f"tb_nr_ln{k}")) <= e * scale * 1.05 + 1e-5
        assert float(glued(f"tb_nr_ln{k}")) > 0.05 * e * scale
    mean32 = x.mean(-1, dtype=np.float32)  # numpy's pairwise sum, not the chapter's tree
    dev32 = x - mean32[:, None]
    exact = dev32 * (np.float32(1) / np.sqrt((dev32 * dev32).mean(-1, dtype=np.float32) + np.float32(1e-5)))[:, None]
    floor = float(np.max(np.abs(exact * gamma + beta - ref)))
    assert float(glued("tb_nr_ln3")) < 3 * floor
    assert float(glued("tb_nr_ln_np")) < 3 * floor


def test_one_pass_variance_goes_negative():
    row = (np.random.default_rng(5).standard_normal((1, 4096)) * 0.1 + 1000.0).astype(np.float32)
    var = float(row.astype(np.float64).var())
    one_pass, two_pass = float(glued("tb_nr_one_pass")), float(glued("tb_nr_two_pass"))
    assert two_pass == pytest.approx(var, rel=1e-4)
    step = 2.0 ** (math.floor(math.log2(1000.0 ** 2)) - 23)  # float32 spacing near E[x^2] ~ 1e6: 0.0625
    assert one_pass < -1e-5 and (one_pass / step) == pytest.approx(round(one_pass / step))
    assert glued("tb_nr_bad_r") == "True"  # a negative 'rsqrt' below 1e-30 in size: the output collapses to beta
    assert float(glued("tb_nr_sum_tree")) < float(glued("tb_nr_sum_running"))


def test_branch_free_max_and_abs():
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(100_000) * 10.0 ** rng.uniform(-4, 4, 100_000)).astype(np.float32)
    b = (rng.standard_normal(100_000) * 10.0 ** rng.uniform(-4, 4, 100_000)).astype(np.float32)
    wrong = int(np.count_nonzero((a + b + np.abs(a - b)) * np.float32(0.5) != np.fmax(a, b)))
    assert glued("tb_nr_arith_max_wrong") == f"{wrong:,}"
    arith = (a + b + np.abs(a - b)) * np.float32(0.5)
    bad = arith != np.fmax(a, b)
    small = np.abs(np.fmax(a, b)) < np.abs(np.fmin(a, b))
    assert glued("tb_nr_max_small") == f"{int(np.count_nonzero(bad & small)):,}"
    assert glued("tb_nr_max_zero") == f"{int(np.count_nonzero(bad & (arith == 0))):,}"
    assert np.count_nonzero(bad & small) > 0.9 * wrong  # "almost all"
    # the mask select, one pair at a time with Python integers, on a sample
    for x, y in zip(a[:2000].tolist(), b[:2000].tolist()):
        xf, yf = np.float32(x), np.float32(y)
        neg = struct.unpack("<i", struct.pack("<f", float(xf - yf)))[0] < 0
        assert (y if neg else x) == max(x, y)
    assert "max by mask equals np.maximum: True" in chapter_outputs.printed(NB, "max_bits =")
    assert "abs by mask equals np.abs: True" in chapter_outputs.printed(NB, "max_bits =")


def test_no_glue_key_of_the_section_is_missing():
    text = section()
    for key in set(__import__("re").findall(r"\{glue:text\}`(tb_nr_[a-z0-9_]+)`", text)):
        glued(key)
    json.dumps(NB)  # the notebook is plain JSON
