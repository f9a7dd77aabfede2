"""The numbers of the sections on convolution, TPU padding buckets, format limits, stream metrics and the loss scale,
recomputed by hand (cuda_basics, softmax_numerics, serving_operations)."""
import math

import pytest

import mha_kit as mk


def test_convolution_numbers():
    # 3x3 over a 58 x 58 x 64 input: 56 x 56 patches of 576 values against 58 * 58 * 64 inputs
    assert 56 * 56 * 576 / (58 * 58 * 64) == pytest.approx(8.39, abs=0.01)
    assert mk.halo_load_factor(16, 3) == pytest.approx(324 / 256)  # printed 1.27
    assert 36 / 16 == 2.25 and 144 / 36 == 4  # Winograd F(2x2,3x3) and F(4x4,3x3)
    assert 56 * 56 * 2 == 6272  # NCHW: the next channel of a pixel is one bf16 plane away


def test_tpu_bucket_numbers():
    pow2 = [16 * 2 ** i for i in range(10)]  # 16 ... 8192
    assert mk.tpu_token_paddings(16, 8192) == pow2
    gap = [16, 32, 64, 128, 256] + list(range(512, 8192 + 1, 256))  # double to 256, then +256
    assert mk.tpu_token_paddings(16, 8192, 256) == gap and len(gap) == 36
    assert round(1 - 600 / 1024, 2) == 0.41 and round(1 - 600 / 768, 2) == 0.22


def test_format_limits_quoted():
    assert 2.0 ** -24 == pytest.approx(5.96e-8, rel=1e-3)  # fp16 smallest subnormal
    assert 2.0 ** -126 == pytest.approx(1.18e-38, rel=1e-2)  # bf16 and fp32 smallest normal
    assert 24 * math.log(2) == pytest.approx(16.6, abs=0.05)  # logit gap where fp16 probabilities vanish
    assert 149 * math.log(2) == pytest.approx(103.3, abs=0.05)  # fp32, subnormals kept
    assert math.sqrt(65504) == pytest.approx(255.94, abs=0.01)  # squares overflow fp16 above this


def test_stream_metric_numbers():
    # 10 gaps of 20 ms and 200 of 40 ms; per request (20 + 40) / 2
    assert (10 * 20 + 200 * 40) / 210 == pytest.approx(39.05, abs=0.01)
    # 41 chunks of 3 tokens, 60 ms apart: 2.4 s over 122 tokens after the first
    assert 40 * 60 / 122 == pytest.approx(19.67, abs=0.01)


def test_loss_scale_trace_printed():
    scales, skipped = mk.dynamic_loss_scale([True, True] + [False] * 6 + [True, False], growth_interval=3)
    assert [int(math.log2(s)) for s in scales] == [16, 15, 14, 14, 14, 15, 15, 15, 16, 15]
    assert int(skipped.sum()) == 3
