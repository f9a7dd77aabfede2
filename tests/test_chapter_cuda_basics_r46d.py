"""Sections cuda_basics-in-order (how many CUDA threads an H100 keeps resident) and cuda_basics-gpu-comparison
(SMs, L2, memory type, FP8 and power), recomputed from the primary figures: NVIDIA's Hopper in-depth post,
Tables 1 and 3 (64 warps of 32 threads and 65,536 registers per SM, at most 255 a thread; 108/132 SMs,
40/50 MB L2, 400/700 W), the H100 datasheet (FP8 3,958 TFLOPS sparse, bf16 989 dense), the A100 datasheet
(312 dense bf16) and the Ada whitepaper v2.02, Appendix A, Table 2 (RTX 4090: 128 SMs, 73,728 KB L2,
FP8 with FP32 accumulate 330.3 dense, BF16 165.2 dense)."""
import re

import pytest

import chapter_outputs



def _cell(marker):
    """What the code cell containing ``marker`` printed, and the values it glued."""
    nb = chapter_outputs.notebook("cuda_basics")
    return chapter_outputs.printed(nb, marker), chapter_outputs.cell_glue(nb, marker)


def test_resident_threads_and_registers():
    text, glued = _cell("glue(\"cb_thr_chip\"")
    warps, lanes, sms, regs = 64, 32, 132, 65_536
    per_sm = warps * lanes
    assert per_sm == 2048
    assert f"per SM: 64 warps x 32 = {per_sm:,} resident threads; x 132 SMs = {per_sm * sms:,} on the chip" in text
    # 255 registers round up to 256 a thread: 65,536 / 256 = 256 threads = 8 warps
    assert f"= {regs // per_sm} each at full residency; a thread using the maximum 255 leaves room for " \
           f"{regs // 256 // lanes} warps" in text
    assert glued == {"cb_thr_sm": "2,048", "cb_thr_chip": f"{per_sm * sms:,}", "cb_thr_regs": "32"}


ROWS = {  # card: (SMs, L2 MB, memory, dense FP8 TFLOPS, dense bf16 TFLOPS, watts)
    "A100 80GB SXM": (108, 40, "HBM2e", None, 312, 400),
    "H100 SXM": (132, 50, "HBM3", 3958 / 2, 989, 700),
    "H800 SXM": (132, None, "-", None, 990, None),  # DeepSeek-V3 report §3.5.1: "the 132 SMs available in the H800"
    "GeForce RTX 4090": (128, 73_728 / 1024, "GDDR6X", 330.3, 165.2, 450),
}


@pytest.mark.parametrize("card", list(ROWS))
def test_spec_rows(card):
    sms, l2, mem, fp8, bf16, watts = ROWS[card]
    text, _ = _cell("spec = {")
    row = next(line for line in text.splitlines() if line.startswith(card))
    fields = re.split(r"\s+", row[len(card):].strip())
    expected = ["-" if sms is None else str(sms), "-" if l2 is None else f"{l2:.0f}", mem,
                "-" if fp8 is None else f"{fp8:,.0f}", "-" if fp8 is None else f"{fp8 / bf16:.1f}x",
                "-" if watts is None else str(watts)]
    assert fields == expected, row


def test_per_watt_and_glue():
    text, glued = _cell("spec = {")
    assert f"A100 {312 / 400:.2f}, H100 {989 / 700:.2f}, RTX 4090 {165.2 / 450:.2f}" in text
    assert glued == {"cb_gpus_h100_fp8": "1,979", "cb_gpus_4090_fp8_ratio": f"{330.3 / 165.2:.1f}",
                     "cb_gpus_h100_per_w": f"{989 / 700:.2f}", "cb_gpus_a100_per_w": f"{312 / 400:.2f}"}
