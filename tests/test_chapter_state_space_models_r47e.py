"""Section state_space_models-rnn-vs-mamba: why Mamba's recurrence scans in parallel and an RNN's does not.

Recomputed without mha_kit: the composition of affine steps h -> a h + b (Martin & Cundy 2018; SSMScanOp in
mamba_ssm 2.3.2.post1), two tanh steps against one, the kernel's chunk (128 threads x 16 items above 1,024
tokens, selective_scan_fwd_cuda) and the H100 SXM datasheet's 989 TFLOPS bf16 dense against 67 TFLOPS FP32.
"""
import math

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("state_space_models")
SECTION = chapter_outputs.section(NB, "state_space_models-rnn-vs-mamba", end="state_space_models-bilinear")
OUT = chapter_outputs.printed(NB, "def rv_then(")
KERNEL = chapter_outputs.printed(NB, "rv_threads, rv_items =")


def _compose(first, second):  # written from SSMScanOp<float>: (a1 a0, a1 b0 + b1)
    (a0, b0), (a1, b1) = first, second
    return a1 * a0, a1 * b0 + b1


def test_affine_composition_is_associative_and_equals_the_recurrence():
    rng = np.random.default_rng(3)
    steps = [(rng.uniform(0.1, 0.9, 5), rng.normal(size=5)) for _ in range(4)]
    left = _compose(_compose(_compose(steps[0], steps[1]), steps[2]), steps[3])
    right = _compose(steps[0], _compose(steps[1], _compose(steps[2], steps[3])))
    h0 = rng.normal(size=5)
    h = h0
    for a, b in steps:
        h = a * h + b
    assert np.allclose(left[0], right[0]) and np.allclose(left[1], right[1])
    assert np.allclose(left[0] * h0 + left[1], h)
    assert "((1,2),3) == (1,(2,3)): True" in OUT and "composed map on h0 == three steps: True" in OUT
    assert "the composed map is 8 numbers (2N)" in OUT


def test_two_tanh_steps_are_not_one():
    grid = np.linspace(-2.0, 2.0, 401)
    two = np.tanh(1.5 * np.tanh(1.5 * grid + 0.3) - 0.4)
    pre = np.arctanh(two)
    miss = np.abs(np.polyval(np.polyfit(grid, pre, 1), grid) - pre).max()
    assert miss > 0.1
    assert f"two steps miss every line by {miss:.2f}" in OUT
    assert "one step lies on a line: True" in OUT
    assert chapter_outputs.glued(NB, "ssm_rv_miss_two") == f"{miss:.2f}"


def test_kernel_chunks_and_core_ratio():
    chunk = 128 * 16
    assert chunk == 2048 and math.ceil(4096 / chunk) == 2
    shuffles, warps = int(math.log2(32)), 128 // 32  # cub BLOCK_SCAN_WARP_SCANS: warp scan, then the warp totals
    assert (shuffles, warps) == (5, 4)
    assert "4,095 dependent steps" in KERNEL and "2 chunks of 2,048" in KERNEL
    assert "about 2 x 16 serial combines per thread" in KERNEL
    assert f"warp scan of {shuffles} shuffle levels and a combine of the {warps} warp totals" in KERNEL
    assert "depth 7" not in KERNEL
    assert f"{989 / 67:.1f}x" == "14.8x" and "14.8x" in KERNEL
    assert chapter_outputs.glued(NB, "ssm_rv_chunk") == "2,048"


def test_cited_linked_and_boxed():
    chapter_outputs.assert_cited(SECTION, ["martin2018parallel", "mambascankernel", "gu2023mamba",
                                           "blelloch1990prefix", "nvidiah100"])
    assert "`mambascankernel{selective_scan_fwd_kernel.cuh, dim3 grid}`" in SECTION
    assert "exactly in one pass" in SECTION and "keeping all $k$ steps" not in SECTION
    assert ",dao2024mamba2{§6}`" in SECTION
    for label in ("why_attention-lstm-gru", "state_space_models-mamba2", "state_space_models-selective-scan"):
        assert "{ref}`" + label + "`" in SECTION
    assert "```{admonition} In the interview" in SECTION and ":class: dropdown" in SECTION
    assert "2.3.2.post1" in SECTION
