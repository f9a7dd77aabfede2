"""Section weight_quantization-fp8-training: FP8 formats' ranges, per-tensor against per-tile scales, savings.

Recomputed here from the formats' definitions (OCP FP8 / Micikevicius et al. 2022, Table 1: E4M3 with bias 7,
no infinities, largest 1.75 x 2^8; E5M2 with bias 15, largest 1.75 x 2^15), with a rounding written out in
numpy rather than ml_dtypes' casts, Llama 3 70B's config.json shape and the H100 SXM datasheet rates, and
compared with the chapter's stored outputs.
"""
import numpy as np
import pytest

import chapter_outputs

NB = chapter_outputs.notebook("weight_quantization")
# (exponent bits, mantissa bits, largest value): the two FP8 formats
FMT = {"e4m3": (4, 3, 1.75 * 2**8), "e5m2": (5, 2, 1.75 * 2**15)}
D, FFN, L, P70 = 8192, 28672, 80, 70_553_706_496  # Llama 3 70B
BF16, FP8 = 989e12, 1979e12  # H100 SXM dense tensor-core peaks


def glued(key):
    return chapter_outputs.glued(NB, key)


def limits(fmt):
    e, m, big = FMT[fmt]
    emin = 2 - 2 ** (e - 1)  # bias 2^(e-1) - 1, smallest normal exponent 1 - bias
    return big, 2.0**emin, 2.0 ** (emin - m)


def round_fp8(x, fmt):
    """Round to nearest even on the format's grid: step 2^(exponent - m), subnormal step below 2^emin."""
    e, m, big = FMT[fmt]
    emin = 2 - 2 ** (e - 1)
    exp = np.maximum(np.floor(np.log2(np.maximum(np.abs(x), 1e-300))), emin)
    step = 2.0 ** (exp - m)
    return np.clip(np.round(x / step) * step, -big, big)  # np.round rounds half to even


def test_ranges():
    assert limits("e4m3") == (448.0, 2.0**-6, 2.0**-9)
    assert limits("e5m2") == (57344.0, 2.0**-14, 2.0**-16)
    for fmt in FMT:
        big, _, sub = limits(fmt)
        assert glued(f"ft27_{fmt}_max") == f"{big:,.0f}"
        assert glued(f"ft27_{fmt}_decades") == f"{np.log10(big / sub):.1f}"


def test_rounding_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(0).standard_normal(20_000) * 10.0 ** np.random.default_rng(1).uniform(-5, 2, 20_000)
    for fmt, dt in (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
        xs = np.clip(x, -limits(fmt)[0], limits(fmt)[0])
        assert np.array_equal(round_fp8(xs, fmt), xs.astype(dt).astype(np.float64))


def demo():
    rng = np.random.default_rng(27)
    size = 10.0 ** rng.uniform(-6, 0, size=(64, 32, 1))
    g = rng.standard_normal((64, 32, 128)) * size
    out = {}
    for key, fmt, amax in (("e4m3_tensor", "e4m3", np.abs(g).max()), ("e5m2_tensor", "e5m2", np.abs(g).max()),
                           ("e4m3_tile", "e4m3", np.abs(g).max(axis=2, keepdims=True))):
        scale = amax / FMT[fmt][2]
        q = round_fp8(g / scale, fmt) * scale
        err = np.sqrt(((q - g) ** 2).sum(axis=2) / (g**2).sum(axis=2))
        out[key] = (np.mean((q == 0) & (g != 0)), np.median(err), err.max())
    return out


def test_per_tensor_against_per_tile():
    out = demo()
    for key, (flushed, med, worst) in out.items():
        assert glued(f"ft27_{key}_flush") == f"{flushed:.1%}"
        assert glued(f"ft27_{key}_med") == f"{med:.2%}"
        assert glued(f"ft27_{key}_worst") == f"{worst:.0%}"
    assert out["e4m3_tensor"][0] > 1 / 6  # the tiles below ~1e-5 (a sixth of six decades) vanish, and more
    assert out["e4m3_tensor"][2] == 1.0  # a tile flushed whole
    assert out["e5m2_tensor"][0] < 1e-4 and out["e4m3_tile"][0] < 1e-5  # only values near zero within a tile
    assert out["e4m3_tile"][1] < out["e5m2_tensor"][1] / 1.8  # one mantissa bit more: about half the step


def test_savings():
    assert glued("ft27_peak") == f"{FP8 / BF16:.1f}" == "2.0"
    assert glued("ft27_amdahl_70") == f"{1 / (0.3 + 0.7 * BF16 / FP8):.2f}"
    saved = 3 * D + FFN
    assert saved == 53_248 and glued("ft27_saved") == "53,248"
    assert glued("ft27_act_bf16") == f"{saved * L * 4096 * 2 / 1e9:.1f}"
    assert glued("ft27_act_fp8") == f"{saved * L * 4096 * 1.03125 / 1e9:.1f}"
    # DeepSeek-V3 Sec. 3.3.3: the input of the Linear after attention (D per token) in E5M6, 12 bits = 1.5 bytes
    e5m6 = (D * (12 / 8 + 4 / 128) + (saved - D) * (1 + 4 / 128)) * L * 4096 / 1e9
    assert glued("ft27_act_e5m6") == f"{e5m6:.1f}" and e5m6 - saved * L * 4096 * 1.03125 / 1e9 > 1.3


def test_state_bytes_unchanged():
    assert glued("ft27_bpp") == "14" and glued("ft27_bpp_grad") == "16"  # 2 + 4 + 4 + 4, and a bf16 gradient
    assert glued("ft27_state_tb") == f"{16 * P70 / 1e12:.2f}"
