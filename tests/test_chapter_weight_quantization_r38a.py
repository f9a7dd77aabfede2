"""Section weight_quantization-int8-by-generation, and the chapter's bits-per-weight figures for int4 g128.

The V100/T4/A100/H100 table is recomputed from the datasheet figures (V100: 640 tensor cores x 64 FP16 FMA a
clock = 125 TFLOPS, 80 SMs x 64 INT32 lanes, 900 GB/s; T4: 65 TFLOPS FP16, 130 TOPS INT8, 320 GB/s; A100 40GB:
1,555 GB/s, 312 / 624; H100 SXM: 3.35 TB/s, 989 / 1,979) and compared with the stored output; the extra kernel
count comes from CTranslate2's Dense on a biased layer (float16: GEMM + bias-add; int8: quantize, GEMM,
dequantize with the bias: one extra) and a 6-layer decoder; the 128-row step is batch 32 x beam 4."""
import json
import pathlib
import re

NB = pathlib.Path(__file__).parents[1] / "book" / "weight_quantization.ipynb"
P = 10**9
CARDS = [  # name, path, bandwidth, fp16, int8
    ("V100 SXM2 (sm70)", "dp4a", 900e9, 125e12, 80 * 64 * 4 * 2 * 125e12 / (640 * 64 * 2)),
    ("T4 (sm75)", "tensor", 320e9, 65e12, 130e12),
    ("A100 40GB (sm80)", "tensor", 1555e9, 312e12, 624e12),
    ("H100 SXM (sm90)", "tensor", 3.35e12, 989e12, 1979e12),
]


def _nb():
    return json.loads(NB.read_text())


def _cell_lines(marker):
    cell = next(c for c in _nb()["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"]))
    assert not [o for o in cell["outputs"] if o.get("name") == "stderr"]
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").strip().splitlines()


def _floor(bits, bw, peak):  # batch-1 step: weight bytes over bandwidth against 2 ops per weight
    return max(P * bits / 8 / bw, 2 * P / peak)


def _table():
    """{card: its columns} of the printed generation table, columns split on two or more spaces."""
    lines = _cell_lines("v100_dp4a = 80 * 64")
    return {cols[0]: cols[1:] for cols in (re.split(r"\s{2,}", line.strip()) for line in lines[1:5])}


def test_dp4a_is_half_the_fp16_tensor_rate():
    """The chapter's printed V100 int8 rate is the dp4a rate recomputed here (80 SMs x 64 lanes x 4 MACs), half its
    printed fp16 tensor rate."""
    row = _table()["V100 SXM2 (sm70)"]
    assert row[2] == f"{80 * 64 * 4 * 2 * 125e12 / (640 * 64 * 2) / 1e12:.1f}" == f"{CARDS[0][4] / 1e12:.1f}"
    assert 2 * float(row[2]) == float(row[1])


def test_generation_table():
    rows = _table()
    assert sorted(rows) == sorted(name for name, *_ in CARDS)
    for name, path, bw, f16, i8 in CARDS:
        row = rows[name]
        assert row[0] == path
        assert float(row[1]) == round(f16 / 1e12) and float(row[2]) == round(i8 / 1e12, 1)
        assert float(row[3]) == round(1e3 * _floor(16, bw, f16), 2)
        assert float(row[4]) == round(1e3 * _floor(8, bw, i8), 2)
        assert int(row[5]) == round(2 * f16 / (2 * bw)) and int(row[6]) == round(i8 / (2 * bw))
    assert rows["V100 SXM2 (sm70)"][6] == f"{CARDS[0][4] / (2 * 900e9):.0f}"  # int8 binds from 35 rows on dp4a
    # batch 1: V100 int8 is below T4 fp16 several times over, on the chapter's printed floors
    assert float(rows["V100 SXM2 (sm70)"][4]) * 5 < float(rows["T4 (sm75)"][3])


def test_extra_kernels_and_break_even():
    lines = _cell_lines("v100_dp4a = 80 * 64")
    extra = (3 - 2) * (6 * 6 + 1)  # one extra kernel per biased Dense: 6 per decoder layer, 6 layers, + output
    assert extra == 37 and lines[5] == f"extra kernels per step, 6-layer decoder: {extra}"
    for line, tau in zip(lines[6:9], (3e-6, 5e-6, 10e-6)):
        v100, t4 = extra * tau * 900e9, extra * tau * 320e9  # saved bytes P x 1 B over B equal the launches
        assert line == (f"launch cost {round(tau * 1e6):>4} us: +{1e3 * extra * tau:.2f} ms a step; int8 saves less "
                        f"below V100 {v100 / 1e6:.0f} M, T4 {t4 / 1e6:.0f} M parameters")
    assert round(extra * 5e-6 * 900e9 / 1e6) == 167 and round(extra * 5e-6 * 320e9 / 1e6) == 59


def _step(bits, rows, bw, peak):  # roofline step over `rows` tokens
    return max(P * bits / 8 / bw, 2 * P * rows / peak)


def test_batched_step_int8_slower_on_v100_only():
    lines = _cell_lines("v100_dp4a = 80 * 64")
    rows = 32 * 4
    for line, (name, _, bw, f16, i8) in zip(lines[9:11], CARDS[:2]):
        t16, t8 = _step(16, rows, bw, f16), _step(8, rows, bw, i8)
        assert line == (f"{name.split()[0]} at {rows} rows: fp16 {1e3 * t16:.2f} ms, int8 {1e3 * t8:.2f} ms, "
                        f"int8/fp16 {t8 / t16:.2f}")
    v100_16, v100_8 = _step(16, rows, 900e9, 125e12), _step(8, rows, 900e9, CARDS[0][4])
    assert v100_16 == 2e9 / 900e9 and v100_8 == 2 * P * rows / 62.5e12  # fp16 still memory-bound, int8 compute-bound
    assert v100_8 / v100_16 > 1.8 and _step(8, rows, 320e9, 130e12) * 2 == _step(16, rows, 320e9, 65e12)


def test_bits_per_weight_rows_name_their_zero_point():
    lines = _cell_lines("nf4_layouts = {")
    gptq = next(line for line in lines if "4-bit zero per 128 (GPTQ)" in line)
    fp16z = next(line for line in lines if "fp16 zero per 128" in line)
    assert f"{4 + (16 + 4) / 128:.3f} bits" in gptq and "4.156 bits" in gptq
    assert f"{4 + (16 + 16) / 128:.3f} bits" in fp16z and "4.250 bits" in fp16z
    assert not any("scale + zero per 128 (GPTQ/AWQ)" in line for line in lines)


def test_summary_states_each_format():
    text = "".join("".join(c["source"]) for c in _nb()["cells"] if c["cell_type"] == "markdown")
    assert "4.25 for int4 with fp16 scale and zero\n  per 128)" not in text
    assert "4.125 with an fp16 scale alone" in text and "4.156 with GPTQ's packed 4-bit zero point" in text


def test_section_cites_and_links():
    md = next("".join(c["source"]) for c in _nb()["cells"]
              if "(weight_quantization-int8-by-generation)=" in "".join(c["source"]))
    for key in ("ctranslate2issue830", "ctranslate2issue829", "nvidiavoltatensorcore", "nvidiaturingwhitepaper",
                "ctranslate2docs", "h100specstables"):
        assert key in md
    rest = "".join("".join(c["source"]) for c in _nb()["cells"] if "i8g_extra" in "".join(c["source"]))
    assert "{ref}`weight_quantization-w4a4-batch-one`" in rest and "{ref}`weight_quantization-batch-one`" in rest
    assert "benchmark each compute type" not in rest and "Ampere and Hopper keep them" not in rest
    assert "ctranslate2issue830{guillaumekln, 13 June 2022}" in rest and "src/types.cc" in rest
    assert "src/ops/gemm.cc" in rest and "adds one per linear layer that has a bias" in rest
