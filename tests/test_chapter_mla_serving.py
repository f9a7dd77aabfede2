"""Claims of mla_serving's H800 paragraph (mla_serving-intensity), recomputed from the sources' numbers.

FlashMLA's deep-dive (docs/20250422-new-kernel-deep-dive.md): H800 SXM5 at 3.35 TB/s, 990 TFLOPS at
peak and about 865 TFLOPS throttled; intensity h_q s_q (d_k + d_v) / d_k with d_k = 576, d_v = 512.
"""
import pytest

import mha_kit as mk


def test_h800_ridges():
    assert f"{865e12 / 3.35e12:.0f}" == "258"  # the throttled ridge, FLOPs per byte
    assert f"{990e12 / 3.35e12:.0f}" == "296"  # the datasheet peak's
    assert f"{0.5 * 865 / 3.35:.0f}" == "129"  # the deep-dive's threshold on h_q s_q, which it writes as 128


def test_mla_at_the_crossing_and_past_it_with_mtp():
    ridge = 865e12 / 3.35e12
    one_token = 128 * 1 * (576 + 512) / 576  # 128 heads, s_q = 1: 241.8 FLOPs per byte
    mtp = 128 * 2 * (576 + 512) / 576  # one drafted token verified: s_q = 2
    assert f"{one_token / ridge:.0%}" == "94%" and one_token < ridge  # just under, not past
    assert f"{mtp:.0f}" == "484" and mtp > ridge
    v3 = mk.PRESETS["deepseek-v3"]
    assert mk.mla_decode_intensity(v3) == pytest.approx(one_token)
    assert mk.mla_decode_intensity(v3, query_tokens=2) == pytest.approx(mtp)
    assert 16 * 2 * (576 + 512) / 576 < ridge  # tensor parallel 8: 16 heads, even with the draft


def test_gqa8_is_eight_flops_per_byte():
    d_h, g = 128, 64 // 8
    flops = g * 2 * 2 * d_h  # per cached token and KV head: q.k and p v for each of the group's query heads
    nbytes = 2 * d_h * 2  # its key and value in bf16
    assert flops / nbytes == 8
    assert mk.arithmetic_intensity(mk.PRESETS["llama-3-70b"], 8192) == 8
    assert f"{(865e12 / 3.35e12) / 8:.0f}" == "32"  # times below the throttled ridge


def test_mxfp4_latent_against_the_tasks_fp8_and_its_measured_speedups():
    """mla_serving-mxfp4-latent: gpu-mode/reference-kernels problems/amd_202602/mixed-mla/README.md.

    The task's FP8 cache is per tensor, one byte for each of 576 dims; MXFP4 packs 576 E2M1 values two a
    byte plus one E8M0 byte per 32; the README's MI355X latency table gives a8w8 and a16w16 in us.
    """
    task_fp8 = 576 * 1
    mxfp4 = 576 // 2 + 576 // 32
    assert (task_fp8, mxfp4) == (576, 306)
    assert f"{task_fp8 / mxfp4:.2f}" == "1.88"
    assert mk.mx_bytes(576) == mxfp4
    speedups = [162 / 118, 177 / 113, 353 / 171, 814 / 349]
    assert [f"{s:.1f}" for s in speedups] == ["1.4", "1.6", "2.1", "2.3"]
