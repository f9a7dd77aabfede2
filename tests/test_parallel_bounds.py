"""mha_kit.parallel_bounds against hand counts and the formulas of their sources."""
import math

import numpy as np
import pytest

import mha_kit as mk


def _counted_attention(q, k, v):
    """Scaled dot-product attention with every scalar operation counted (CSC413 Week 9, Ex. 2c)."""
    ops = dict.fromkeys(mk.attention_op_counts(1, 1, 1, 1), 0)
    n_q, n_k, d_v = q.shape[0], k.shape[0], v.shape[1]
    out = np.zeros((n_q, d_v))
    for i in range(n_q):
        row = []
        for j in range(n_k):
            acc = q[i, 0] * k[j, 0]
            ops["qk_mul"] += 1
            for t in range(1, q.shape[1]):
                acc = acc + q[i, t] * k[j, t]
                ops["qk_mul"] += 1
                ops["qk_add"] += 1
            row.append(acc / math.sqrt(q.shape[1]))
            ops["scale_mul"] += 1
        top = row[0]
        for x in row[1:]:
            top = max(top, x)
            ops["max_cmp"] += 1
        e = [math.exp(x - top) for x in row]
        ops["max_sub"] += n_k
        ops["exp"] += n_k
        total = e[0]
        for x in e[1:]:
            total += x
            ops["sum_add"] += 1
        w = [x / total for x in e]
        ops["div"] += n_k
        for c in range(d_v):
            acc = w[0] * v[0, c]
            ops["pv_mul"] += 1
            for j in range(1, n_k):
                acc += w[j] * v[j, c]
                ops["pv_mul"] += 1
                ops["pv_add"] += 1
            out[i, c] = acc
    return out, ops


def test_op_counts_match_an_instrumented_loop_on_the_csc413_example():
    q = np.array([[1.0, 2.0], [3.0, 1.0]])
    k = np.array([[2.0, 1.0], [1.0, 1.0], [0.0, 1.0]])
    v = np.array([[1.0, 2.0, -2.0], [1.0, 1.0, 2.0], [0.0, 1.0, -1.0]])
    out, ops = _counted_attention(q, k, v)
    assert ops == mk.attention_op_counts(2, 3, 2, 3)
    assert ops["qk_mul"] == 12 and ops["qk_add"] == 6 and ops["pv_mul"] == 18 and ops["pv_add"] == 12
    ref, _ = mk.scaled_dot_product_attention(q[None], k[None], v[None])
    np.testing.assert_allclose(out, ref[0], rtol=1e-12)


def test_attention_only_intensity_is_ts_over_t_plus_s_for_mha_bf16():
    for t, s in ((1, 8192), (512, 512), (4096, 4096), (100, 300)):
        assert mk.attention_only_intensity(t, s, 32, 32) == pytest.approx(t * s / (t + s))
    # GQA decode, g = 8: 2 h S / (b (h + S h_kv)) = 2*64*8192 / (2*(64 + 8192*8)) = 7.99...
    assert mk.attention_only_intensity(1, 8192, 64, 8) == pytest.approx(2 * 64 * 8192 / (2 * (64 + 8192 * 8)))
    with pytest.raises(ValueError, match="divisible by num_kv_heads"):
        mk.attention_only_intensity(1, 8, 6, 4)
    with pytest.raises(ValueError, match="bytes_per_element must be positive"):
        mk.attention_only_intensity(1, 8, 8, 8, bytes_per_element=0)


def test_tp_bound_reproduces_the_scaling_book_example():
    # inference.md: F = 16,384, B = 32, beta = 8 -> 16384 / (32 * 8) = 64 ways
    assert mk.tp_decode_comm_bound(16384, 32, 8.0, 1.0) == 64
    assert mk.tp_decode_comm_bound(16384, 32, 8.0, 1.0, matrices=3) == 96
    with pytest.raises(ValueError, match="bandwidths must be positive"):
        mk.tp_decode_comm_bound(16384, 32, 0, 1.0)


def test_sharded_matmul_traffic_by_hand():
    t = mk.sharded_matmul_traffic(batch=2, contract_dim=8, out_dim=4, ways=4)
    assert t["gather"] == {"sent": 3 * 2 * 4, "macs": 2 * 8 * 4}
    assert t["all_reduce"] == {"sent": 2 * 3 * 2 * 1, "macs": 2 * 2 * 4}
    with pytest.raises(ValueError, match="must be divisible by ways"):
        mk.sharded_matmul_traffic(2, 6, 4, 4)


def test_weight_stationary_1d_flat_2d_falls_as_one_over_sqrt_n():
    b, d = 16, 1024
    one, two, x = mk.weight_stationary_comm(b, d, 4 * d, 1)
    assert one == 0 and two == 0
    one, two, x = mk.weight_stationary_comm(b, d, 4 * d, 16, x=1)
    assert two == one == 2 * 15 * b * d / 16  # X = 1 is the 1D layout
    one, two, x = mk.weight_stationary_comm(b, d, 4 * d, 4096)
    assert one == pytest.approx(2 * b * d, rel=1e-3)
    assert two == pytest.approx(8 * b * d / math.sqrt(4096), rel=0.05)  # F = 4D: 4 B sqrt(D F / n)
    assert x == 32  # sqrt(n D / F) = sqrt(4096 / 4)
    with pytest.raises(ValueError, match="must divide chips"):
        mk.weight_stationary_comm(b, d, 4 * d, 16, x=3)


def test_pass_q_ring_beats_pass_kv_below_two_hkv_over_h():
    h, hkv, dh, c = 128, 8, 128, 8  # Llama 3.1 405B's heads; threshold 2 * 8 / 128 = 1/8
    below = mk.ring_pass_elements(8, 120, h, hkv, dh, c)  # T / (T + P) = 1/16
    above = mk.ring_pass_elements(32, 96, h, hkv, dh, c)  # 1/4
    assert below["pass_q_ring"] < below["pass_kv"] and above["pass_q_ring"] > above["pass_kv"]
    assert mk.ring_pass_elements(16, 112, h, hkv, dh, c)["pass_q_ring"] == mk.ring_pass_elements(
        16, 112, h, hkv, dh, c)["pass_kv"]  # exactly 1/8
    assert below["pass_kv"] == 7 * 16 * 2 * 8 * 128
    with pytest.raises(ValueError, match="cached_tokens must be non-negative"):
        mk.ring_pass_elements(8, -8, h, hkv, dh, c)
    with pytest.raises(ValueError, match="divisible by ranks"):
        mk.ring_pass_elements(9, 0, h, hkv, dh, c)


def test_pipeline_idle_fraction_equals_gpipe_for_equal_costs_and_grows_with_mixing():
    for p, m in ((2, 1), (4, 4), (8, 32)):
        assert mk.pipeline_idle_fraction([1.0] * m, p) == pytest.approx(mk.pipeline_bubble_fraction(p, m))
    assert mk.pipeline_idle_fraction([8, 1, 1, 1], 4) > mk.pipeline_idle_fraction([2.75] * 4, 4)
    with pytest.raises(ValueError, match="non-empty list of positive"):
        mk.pipeline_idle_fraction([], 4)
