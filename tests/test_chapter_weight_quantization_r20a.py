"""Section weight_quantization-npu-int8-symmetric: phone-NPU decode ceilings, activation minima, symmetric weights."""
import math

import numpy as np
import pytest

import mha_kit as mk

# Llama 3.2 1B config.json: d 2048, 16 layers, 32 query heads and 8 KV heads of 64, d_ff 8192, V 128256, tied head
D, LAYERS, Q, KV, D_FF, VOCAB = 2048, 16, 32 * 64, 8 * 64, 8192, 128256
LAYER = D * Q * 2 + D * KV * 2 + 3 * D * D_FF + 2 * D  # q and o, k and v, SwiGLU, two RMSNorms
PARAMS = LAYERS * LAYER + VOCAB * D + D  # one tied table, the final norm
BW = 8 * 9_600e6  # 64-bit interface (8 bytes) at 9,600 MT/s


def test_parameter_count_and_bandwidth():
    assert PARAMS == 1_235_814_400
    assert f"{PARAMS / 1e9:.2f}" == "1.24"
    assert BW == 76_800_000_000 and f"{BW / 1e9:.1f}" == "76.8"


@pytest.mark.parametrize("bits, expected", [(16, "31"), (8, "62"), (4, "124")])
def test_decode_ceiling_by_weight_bits(bits, expected):
    rate = BW / (PARAMS * bits / 8)
    assert f"{rate:.0f}" == expected
    assert mk.edge_decode_ceiling(PARAMS * bits / 8, BW, 2.0) == pytest.approx((rate, rate / 2))


def test_int4_quadruples_the_16_bit_ceiling():
    r16, r4 = (mk.edge_decode_ceiling(PARAMS * b / 8, BW, 1.0)[0] for b in (16, 4))
    assert r4 / r16 == pytest.approx(4.0)


def _minimum(f, lo=-6.0, hi=0.0):
    for _ in range(200):  # ternary search on a unimodal function
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (lo, b) if f(a) < f(b) else (a, hi)
    return f((lo + hi) / 2)


def test_gelu_and_silu_minima():
    gelu = _minimum(lambda x: x * 0.5 * math.erfc(-x / math.sqrt(2)))
    silu = _minimum(lambda x: x / (1 + math.exp(-x)))
    assert f"{gelu:.3f}" == "-0.170" and f"{silu:.3f}" == "-0.278"
    assert gelu < 0 and silu < 0  # neither is one-signed like ReLU


def test_zero_weight_zero_point_drops_the_run_time_row_sum():
    rng = np.random.default_rng(0)
    qx, qw = rng.integers(0, 256, size=(3, 32)), rng.integers(-127, 128, size=(32, 5))
    t = mk.zero_point_gemm_terms(qx, qw, zx=128, zw=0)
    exact = (qx - 128) @ qw
    assert np.array_equal(t["main"] - 128 * t["w_colsum"], exact)  # no x_rowsum term, const 0
    assert t["const"] == 0
    t3 = mk.zero_point_gemm_terms(qx, qw, zx=128, zw=3)
    assert not np.array_equal(t3["main"] - 128 * t3["w_colsum"] + t3["const"], (qx - 128) @ (qw - 3))


def test_int4_build_with_an_int8_head():
    head = VOCAB * D  # the tied embedding / output head
    assert head == 262_668_288
    mixed = (PARAMS - head) // 2 + head  # bytes: 4-bit body, 8-bit head
    assert mixed == 749_241_344
    assert f"{mixed / 1e9:.2f}" == "0.75" and f"{BW / mixed:.0f}" == "103"


def test_kv_cache_bytes_per_token_and_at_4k():
    kv = LAYERS * 2 * KV * 2  # K and V, 8 KV heads of 64, 2 bytes each
    assert kv == 32 * 1024 and f"{kv / 1024:.0f}" == "32"
    assert f"{4096 * kv / 1e9:.2f}" == "0.13"
    assert 0.2 < 4096 * kv / (PARAMS / 2) < 0.25  # about a fifth of the INT4 codes


def test_group_scale_overhead_on_4_bit_codes():
    assert f"{(4 / 64) / 4:.1%}" == "1.6%"  # a 4-bit scale per 64 weights
    assert f"{(16 / 32) / 4:.1%}" == "12.5%"  # an fp16 scale per 32 weights
