"""Section gpu_kernels-prompt-slower-than-generation: LLaMA 7B at Q4_0 on an M1 Max (400 GB/s, 10.4 TFLOPS FP32
assumed), decode against a 512-token prompt run as 512 mat-vecs or as one GEMM, recomputed from the shape
(32 layers, d 4096, FFN 11008, vocabulary 32000) and compared with the stored output."""
import json
import pathlib
import re

import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "gpu_kernels.ipynb"
L, D, F, V = 32, 4096, 11008, 32000
BPW = 4 + 16 / 32  # Q4_0: 4-bit code, one fp16 scale per 32 weights
BW, FP32 = 400e9, 10.4e12
N = 512


def _stdout():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c.get("id") == "gpu_kernels-metal-2")
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _times():
    per_layer = 4 * D * D + 3 * D * F + 2 * D  # q, k, v, o; gate, up, down; two norms
    streamed = L * per_layer + V * D + D  # the output head and final norm, not the input table
    w_bytes = streamed * BPW / 8
    act = L * (11 * D + 3 * F) * 4
    decode = max((w_bytes + act) / BW, 2 * streamed / FP32)
    gemm = max((w_bytes + N * act) / BW, N * 2 * streamed / FP32)
    return streamed, w_bytes, act, decode, gemm


def test_parameter_count_matches_llama_bench():
    params = L * (4 * D * D + 3 * D * F + 2 * D) + 2 * V * D + D
    assert params == 6_738_415_616
    assert round(params / 1e9, 2) == 6.74  # llama-bench's "6.74 B" in llama.cpp PR #2917
    assert f"LLaMA 7B: {params:,} parameters" in _stdout()
    assert f"Q4_0 {BPW} bits/weight, {_times()[1] / 1e9:.2f} GB of weights read per pass" in _stdout()


def test_ridge_and_crossing_batch():
    ridge = FP32 / BW
    assert ridge == pytest.approx(26.0)
    n_ridge = ridge / (2 / (BPW / 8))
    assert 7 < n_ridge < 8  # a handful of prompt tokens makes the Q4_0 product compute-bound
    assert f"ridge {ridge:.0f} FLOP/byte" in _stdout()
    assert f"reaches the ridge at n = {n_ridge:.1f}" in _stdout()


@pytest.mark.parametrize("row, tokens", [("decode, n = 1", 1), ("prompt of 512 as 512 mat-vecs", N),
                                         ("prompt of 512 as one GEMM", N)])
def test_table_rows(row, tokens):
    _, _, _, decode, gemm = _times()
    t = {"decode, n = 1": decode, "prompt of 512 as 512 mat-vecs": N * decode,
         "prompt of 512 as one GEMM": gemm}[row]
    line = next(ln for ln in _stdout().splitlines() if ln.strip().startswith(row))
    cols = [c.strip() for c in line.split("|")]
    assert cols[1] == f"{t * 1e3:.1f}"
    assert cols[2] == f"{t / tokens * 1e3:.2f}"
    assert cols[3] == f"{tokens / t:.0f}"


def test_mat_vecs_equal_decode_and_gemm_is_compute_bound():
    streamed, w_bytes, act, decode, gemm = _times()
    assert decode == (w_bytes + act) / BW  # memory-bound
    assert gemm == N * 2 * streamed / FP32  # compute-bound
    ratio = (N / gemm) / (1 / decode)
    assert 7 < ratio < 8
    assert f"bound ratio prompt/decode {ratio:.1f}x" in _stdout()


def test_measured_ratios():
    gemm_tps = N / _times()[4]
    share = 297 / gemm_tps
    assert 0.35 < share < 0.40  # PR #2615 profiled about 40% average utilisation
    assert f"{100 * share:.1f}% of the GEMM bound" in _stdout()
    assert f"prompt/generation {12 / 22:.2f}x" in _stdout()  # issue #2428: 12 against 22 tokens/s
    assert f"pp512/tg128 {629.60 / 88.54:.1f}x" in _stdout()  # PR #2917: 629.60 / 88.54


def test_h100_crossing():
    h100_ridge = 989e12 / 3.35e12  # H100 SXM dense bf16 over HBM3 bandwidth
    m = re.search(r"\(bf16 ridge (\d+)\) reaches its ridge at n = (\d+)", _stdout())
    assert m is not None
    assert int(m.group(1)) == round(h100_ridge)
    assert int(m.group(2)) == round(h100_ridge * BPW / 16)


def test_h100_int8_crossing():
    int8_ridge = 1979e12 / 3.35e12  # H100 SXM dense INT8 tensor-core peak over HBM3 bandwidth
    n = int8_ridge * BPW / 16
    assert 160 < n < 170  # twice the bf16 crossing
    assert f"(ridge {int8_ridge:.0f}), at n = {n:.0f}" in _stdout()


def test_measured_decode_against_ceilings():
    _, w_bytes, act, decode, _ = _times()
    at_340 = 340e9 / (w_bytes + act)  # PR #2188: sustainable M1 Max GPU bandwidth
    tg = 1000 / 22.5  # PR #2188: 7B q4_0 on an M1 Max, 22.5 ms/token
    assert tg < at_340 < 1 / decode  # the measurement sits under both ceilings
    assert f"sustained 340 GB/s: {at_340:.0f} tok/s" in _stdout()
    assert f"{tg:.1f} tok/s = {100 * tg * decode:.1f}% of the 400 GB/s bound" in _stdout()
    assert f"= {297 / tg:.1f}x" in _stdout()
    m2u = 800e9 / (w_bytes + act)  # M2 Ultra decode ceiling
    assert 200 < m2u < 230
    assert f"M2 Ultra (800 GB/s) decode bound {m2u:.0f} tok/s" in _stdout()
    assert f"is {100 * 88.54 / m2u:.1f}% of it" in _stdout()
