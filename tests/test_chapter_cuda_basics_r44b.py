"""Section cuda_basics-training-dtype-choice: the dynamic range of int8 (one scale) and of the float formats,
and what storing a log-normal gradient sample in each does, recomputed without mha_kit.

Float limits come from numpy's and ml_dtypes' finfo (IEEE 754 binary32/binary16, bfloat16, and the OCP FP8
formats of Micikevicius et al. 2022, Table 1); rounding is re-derived from the bit layout: a value y is
rounded to a multiple of 2**(max(floor(log2|y|), emin) - m), ties to even. Int8 is symmetric absmax:
scale = amax / 127, codes rint(x / scale)."""
import json
import math
import pathlib

import ml_dtypes
import numpy as np
import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "cuda_basics.ipynb"

# name: (finfo, stored mantissa bits, largest magnitude, smallest normal exponent)
FINFO = {"fp32": np.finfo(np.float32), "bf16": ml_dtypes.finfo(ml_dtypes.bfloat16),
         "fp16": np.finfo(np.float16), "fp8_e5m2": ml_dtypes.finfo(ml_dtypes.float8_e5m2),
         "fp8_e4m3": ml_dtypes.finfo(ml_dtypes.float8_e4m3fn)}
MANTISSA = {"fp32": 23, "bf16": 7, "fp16": 10, "fp8_e5m2": 2, "fp8_e4m3": 3}
LARGEST = {"fp32": 3.4028234663852886e38, "bf16": 3.3895313892515355e38, "fp16": 65504.0,
           "fp8_e5m2": 57344.0, "fp8_e4m3": 448.0}
EMIN = {"fp32": -126, "bf16": -126, "fp16": -14, "fp8_e5m2": -14, "fp8_e4m3": -6}


def _cells():
    nb = json.loads(NB.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    span = next(c for c in code if "cb_td_dec_" in "".join(c["source"]))
    sample = next(c for c in code if "cb_td_zero_" in "".join(c["source"]))
    return span, sample


def _stdout(cell):
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").strip().splitlines()


def _glued(*cells):
    return {o["metadata"]["scrapbook"]["name"]: o["data"]["application/papermill.record/text/plain"].strip("'")
            for cell in cells for o in cell["outputs"] if "scrapbook" in o.get("metadata", {})}


def _round_float(y, fmt):
    """Round to the nearest number of fmt from its layout: the quantum of |y|'s binade, subnormals below emin."""
    a = np.abs(y)
    e = np.maximum(np.floor(np.log2(np.where(a > 0, a, 1.0))), EMIN[fmt])
    quantum = 2.0 ** (e - MANTISSA[fmt])
    return np.sign(y) * np.rint(a / quantum) * quantum  # rint: ties to even, like the hardware cast


def _sample():
    rng = np.random.default_rng(0)
    log_mag = np.clip(rng.normal(-4.5, 1.2, size=(64, 64)), -8.0, -1.0)
    return rng.choice([-1.0, 1.0], size=log_mag.shape) * 10.0**log_mag


def _stored(g):
    amax = np.abs(g).max()
    row = np.abs(g).max(axis=1, keepdims=True)
    return {
        "int8, one scale per tensor": np.rint(g / (amax / 127)) * (amax / 127),
        "int8, one scale per row of 64": np.rint(g / (row / 127)) * (row / 127),
        "fp8 e4m3, one scale per tensor": _round_float(g / (amax / 448), "fp8_e4m3") * (amax / 448),
        "fp8 e5m2, one scale per tensor": _round_float(g / (amax / 57344), "fp8_e5m2") * (amax / 57344),
        "fp16, no scale": _round_float(g, "fp16"),
        "bf16, no scale": _round_float(g, "bf16"),
    }


def test_finfo_agrees_with_the_layouts_used_here():
    for fmt, fi in FINFO.items():
        assert float(fi.max) == LARGEST[fmt]
        assert float(fi.smallest_normal) == 2.0 ** EMIN[fmt]
        assert float(fi.smallest_subnormal) == 2.0 ** (EMIN[fmt] - MANTISSA[fmt])


def test_decades_table():
    expected = {"int8, one scale": math.log10(127)}
    expected |= {fmt: math.log10(LARGEST[fmt] / 2.0 ** (EMIN[fmt] - MANTISSA[fmt])) for fmt in FINFO}
    span, _ = _cells()
    lines = _stdout(span)
    assert len(lines) == len(expected)
    for line, (name, dec) in zip(lines, expected.items()):
        assert line.startswith(name) and line.endswith(f"{dec:5.1f} decades"), line
    glued = _glued(span)
    assert glued["cb_td_dec_int8"] == "2.1"
    for fmt in FINFO:
        assert glued[f"cb_td_dec_{fmt}"] == f"{expected[fmt]:.1f}"


def test_the_rounding_here_matches_the_dtype_casts():
    """A precondition, not a chapter test: the layout rounding above is what the dtypes store."""
    g = _sample()
    assert np.array_equal(_round_float(g, "fp16"), g.astype(np.float16).astype(np.float64))
    assert np.array_equal(_round_float(g, "bf16"), g.astype(ml_dtypes.bfloat16).astype(np.float64))


def test_sample_table():
    g = _sample()
    _, sample = _cells()
    lines = _stdout(sample)
    assert lines[0] == f"4096 values, |g| from {np.abs(g).min():.1e} to {np.abs(g).max():.1e}"
    assert lines[0] == "4096 values, |g| from 1.0e-08 to 1.0e-01"
    for line, (name, q) in zip(lines[1:], _stored(g).items()):
        zero = np.mean(q == 0)
        rel = np.median(np.abs(q - g) / np.abs(g))
        assert line == f"{name:<31} rounds to 0: {zero:6.1%}   median relative error: {rel:7.2%}"


@pytest.mark.parametrize("key, threshold_rule", [
    ("tensor", "half an int8 step of the tensor's absmax"),
    ("bf16", "half bf16's smallest subnormal"),
])
def test_zero_counts_from_thresholds(key, threshold_rule):
    """A value rounds to 0 exactly when it is at most half the smallest nonzero step (a tie goes to 0, the even code)."""
    g = np.abs(_sample())
    cut = g.max() / 127 / 2 if key == "tensor" else 2.0**-133 / 2
    _, sample = _cells()
    assert _glued(sample)[f"cb_td_zero_{key}"] == f"{np.mean(g <= cut):.1%}", threshold_rule


def test_int8_loses_most_and_finer_rows_do_not_save_it():
    g = np.abs(_sample())
    per_tensor = np.mean(g <= g.max() / 254)
    per_row = np.mean(g <= g.max(axis=1, keepdims=True) / 254)
    assert per_tensor > 0.8 and per_row > 0.6  # the claims the prose makes in words


def test_glued_cuts_and_zero_shares():
    g = np.abs(_sample())
    amax = g.max()
    _, sample = _cells()
    glued = _glued(sample)
    assert glued["cb_td_amax"] == f"{amax:.1e}"
    assert glued["cb_td_step_int8"] == f"{amax / 127:.1e}"
    assert glued["cb_td_cut_int8"] == f"{amax / 254:.1e}"
    assert glued["cb_td_cut_e4m3"] == f"{amax / 448 * 2.0**-10:.1e}"
    names = {"tensor": "int8, one scale per tensor", "row": "int8, one scale per row of 64",
             "e4m3": "fp8 e4m3, one scale per tensor", "e5m2": "fp8 e5m2, one scale per tensor",
             "fp16": "fp16, no scale", "bf16": "bf16, no scale"}
    stored = _stored(_sample())
    for key, name in names.items():
        assert glued[f"cb_td_zero_{key}"] == f"{np.mean(stored[name] == 0):.1%}"
    assert _stdout(sample)[-1] == f"amax {amax:.1e}: int8 flushes below {amax / 254:.2e}, scaled e4m3 below {amax / 448 * 2.0**-10:.2e}"


def _extra_cell():
    nb = json.loads(NB.read_text())
    return next(c for c in nb["cells"] if c["cell_type"] == "code" and "cb_td_sr_zero" in "".join(c["source"]))


def test_stochastic_rounding_is_unbiased_where_rtn_loses():
    """Stochastic rounding on the per-tensor int8 grid: 0 or one step with probability |g|/step."""
    g = _sample()
    step = np.abs(g).max() / 127
    lost = np.abs(g) <= step / 2
    u = np.random.default_rng(1).random(g.shape)
    sr = np.floor(np.abs(g) / step + u) * step
    glued = _glued(_extra_cell())
    assert glued["cb_td_sr_zero"] == f"{np.mean(sr == 0):.1%}"
    ratio = sr[lost].sum() / np.abs(g[lost]).sum()
    assert glued["cb_td_sr_ratio"] == f"{ratio:.2f}"
    assert abs(ratio - 1) < 0.1  # unbiased in expectation, as the drill says
    expected_zero = np.mean(np.where(np.abs(g) < step, 1 - np.abs(g) / step, 0.0))
    assert abs(np.mean(sr == 0) - expected_zero) < 0.03  # P(0) = 1 - |g|/step below one step
    assert np.mean(sr == 0) < np.mean(lost)  # fewer zeros than round-to-nearest


def test_adam8_bytes_and_h100_rates():
    glued = _glued(_extra_cell())
    assert glued["cb_td_adam8_block"] == "2,048"  # Dettmers et al. 2022 §2
    assert glued["cb_td_adam32_bytes"] == "8"
    assert glued["cb_td_adam8_bytes"] == f"{2 + 2 * 4 / 2048:.2f}" == "2.00"
    # NVIDIA H100 SXM datasheet: INT8 3,958 TOPS and FP8 3,958 TFLOPS with sparsity, half dense
    assert glued["cb_td_h100_int8"] == glued["cb_td_h100_fp8"] == "1,979"
