"""Section softmax_numerics-fp16-or-bf16-serving of "Softmax numerics in current models".

FP16 or BF16 for a 13B model: the weight bytes, the equal dense FP16 and BF16 tensor rates on the A100 and the
H100, both formats' largest number and step above 1, and 70,000 cast to each. Recomputed from the formats' bit
layouts by hand and NVIDIA's rate tables, not through mk.
"""
import pathlib

import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
NB = chapter_outputs.notebook("softmax_numerics")
RATES = {"A100 40GB SXM": (312, 312), "H100 SXM": (989, 989)}  # dense TFLOPS (bf16, fp16)


def glued(key):
    return chapter_outputs.glued(NB, key)


def round_to_bits(x, mantissa_bits):  # round to nearest even at mantissa_bits stored bits, normal range
    e = 0
    while 2.0 ** (e + 1) <= x:
        e += 1
    step = 2.0 ** (e - mantissa_bits)
    q, r = divmod(x, step)
    if r > step / 2 or (r == step / 2 and q % 2 == 1):
        q += 1
    return q * step


def test_weight_bytes_and_formats():
    assert glued("sf_13b_gb") == f"{13e9 * 16 / 8 / 1e9:.0f}" == "26"
    assert glued("sf_fp16_eps") == f"{2.0 ** -10:.3g}" and glued("sf_bf16_eps") == f"{2.0 ** -7:.3g}"
    assert (glued("sf_fp16_bits"), glued("sf_bf16_bits")) == ("11", "8")


def test_activation_cast():
    fp16_max = (2 - 2.0 ** -10) * 2.0 ** 15
    assert fp16_max == 65504 and 7e4 > fp16_max + 2.0 ** 4  # past the rounding midpoint too: inf
    assert glued("sf_act_fp16") == "inf"
    assert glued("sf_act_bf16") == f"{round_to_bits(7e4, 7):,.0f}" == "70,144"


def test_printed_rates():
    out = chapter_outputs.printed(NB, "SF_FP16_FLOPS")
    for title, (bf16, fp16) in RATES.items():
        assert f"{title:<14} dense TFLOPS: bf16 {bf16}, fp16 {fp16}, ratio {fp16 / bf16:.2f}" in out
    assert "activation 70,000: fp16 inf, bf16 70,144" in out
    # the two formats' lines: (mantissa bits, largest exponent) of IEEE binary16 and of bfloat16
    for name, (mant, emax) in {"fp16": (10, 15), "bf16": (7, 127)}.items():
        largest = (2 - 2.0 ** -mant) * 2.0 ** emax
        line = f"{name}: largest {largest:.6g}, step above 1 {2.0 ** -mant:.3g}, {mant + 1} significant bits"
        assert line in out.splitlines(), line


def test_section_placement_and_links():
    text = (BOOK / "softmax_numerics.ipynb").read_text(encoding="utf-8")
    start = text.index("(softmax_numerics-fp16-or-bf16-serving)=")
    end = text.index("(softmax_numerics-max-shift)=")
    assert text.index("(softmax_numerics-formats)=") < start < end
    for ref in ("softmax_numerics-formats", "weight_quantization-error-spike"):
        assert f"{{ref}}`{ref}`" in text[start:end]
    assert "t0ppmodelcard" in text[start:end] and "tgi356" in text[start:end]


def test_trained_dtype_not_torch_dtype():
    text = (BOOK / "softmax_numerics.ipynb").read_text(encoding="utf-8")
    section = text[text.index("(softmax_numerics-fp16-or-bf16-serving)="):text.index("(softmax_numerics-max-shift)=")]
    assert "raschkallama2weights" in section and "--dtype float16" in section
    assert "read from `torch_dtype`" not in section and "trained in** (`torch_dtype`" not in section
