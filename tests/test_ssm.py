"""State-space and other linear-time layers against their reference formulas and each other.

Sources: Mamba's ``selective_scan_ref`` (state-spaces/mamba, mamba_ssm/ops/selective_scan_interface.py:
``deltaA = exp(delta A)``, ``deltaB_u = delta B u``, ``x = deltaA x + deltaB_u``, ``y = C . x``,
``out = y + D u``); Mamba-2's SSD (Dao and Gu 2024; ``segsum`` in mamba_ssm/modules/ssd_minimal.py);
Performer's FAVOR+ (Choromanski et al. 2021, Lemma 1); RWKV-4's WKV (Peng et al. 2023, sec. 3.1);
the state shapes of the reference ``allocate_inference_cache`` and of vLLM's state calculator.
"""
import math

import numpy as np
import pytest

import mha_kit as mk


def _inputs(L=13, d=3, N=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(L, d)), np.exp(rng.normal(size=(L, d)) - 2), -np.exp(rng.normal(size=(d, N))),
            rng.normal(size=(L, N)), rng.normal(size=(L, N)), rng.normal(size=d))


def test_selective_scan_by_hand_one_channel_one_state():
    # h1 = dt1 B1 x1 = 0.5 * 2 * 1 = 1; y1 = C1 h1 + D x1 = 3 + 0.5
    # h2 = exp(dt2 A) h1 + dt2 B2 x2 = exp(-1) * 1 + 1 * 1 * 2; y2 = C2 h2 + D x2
    x, dt, A, B, C, D = [[1.0], [2.0]], [[0.5], [1.0]], [[-1.0]], [[2.0], [1.0]], [[3.0], [-1.0]], [0.5]
    y, h = mk.selective_scan(x, dt, A, B, C, D)
    h2 = math.exp(-1.0) + 2.0
    np.testing.assert_allclose(y[:, 0], [3.5, -h2 + 1.0], rtol=1e-14)
    np.testing.assert_allclose(h, [[h2]], rtol=1e-14)


def test_b_is_discretised_by_euler_not_zero_order_hold():
    # the reference multiplies B by delta; ZOH would give (exp(dt A) - 1) / A * B instead
    _, h = mk.selective_scan([[1.0]], [[0.5]], [[-2.0]], [[1.0]], [[1.0]])
    assert h[0, 0] == 0.5
    assert h[0, 0] != pytest.approx((math.exp(-1.0) - 1) / -2.0)


@pytest.mark.parametrize("L", [1, 2, 7, 8, 13, 64])  # powers of two and not
def test_parallel_scan_equals_recurrence(L):
    x, dt, A, B, C, D = _inputs(L=L)
    y, h = mk.selective_scan(x, dt, A, B, C, D)
    y_par, h_par = mk.selective_scan_parallel(x, dt, A, B, C, D)
    np.testing.assert_allclose(y_par, y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h_par, h, rtol=1e-12, atol=1e-12)


def test_decode_steps_equal_the_full_scan():
    x, dt, A, B, C, D = _inputs()
    y, h = mk.selective_scan(x, dt, A, B, C, D)
    state = np.zeros_like(A)
    for t in range(x.shape[0]):
        y_t, state = mk.selective_scan_step(state, x[t], dt[t], A, B[t], C[t], D)
        np.testing.assert_allclose(y_t, y[t], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(state, h, rtol=1e-13)


def test_ssd_mask_is_products_of_decays():
    a = np.array([0.5, 0.25, 0.8])
    expected = np.array([[1, 0, 0], [0.25, 1, 0], [0.25 * 0.8, 0.8, 1]])
    np.testing.assert_allclose(mk.ssd_mask(np.log(a)), expected, rtol=1e-14)


def test_ssd_quadratic_form_equals_the_recurrence():
    rng = np.random.default_rng(1)
    L, P, N, A = 17, 5, 4, -0.7
    x, B, C = rng.normal(size=(L, P)), rng.normal(size=(L, N)), rng.normal(size=(L, N))
    dt = np.exp(rng.normal(size=L) - 1)
    recurrent, _ = mk.selective_scan(x, np.repeat(dt[:, None], P, axis=1), np.full((P, N), A), B, C)
    np.testing.assert_allclose(mk.ssd_quadratic(x, dt, A, B, C), recurrent, rtol=1e-12, atol=1e-12)


def test_orthogonal_projection_rows():
    w = mk.orthogonal_gaussian(8, 8, seed=0)
    gram = w @ w.T
    np.testing.assert_allclose(gram - np.diag(np.diag(gram)), 0, atol=1e-10)  # one block: orthogonal rows
    assert mk.orthogonal_gaussian(20, 8).shape == (20, 8)


def test_favor_features_are_positive_and_unbiased():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 8)) * 0.4
    w = rng.normal(size=(200_000, 8))
    phi_q, phi_k = mk.favor_features(q[None], w), mk.favor_features(k[None], w)
    assert (phi_q > 0).all()
    assert (phi_q @ phi_k.T)[0, 0] == pytest.approx(math.exp(q @ k), rel=0.01)  # Lemma 1


def test_performer_error_falls_with_more_features():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 128, 16)) * 0.5
    exact, _ = mk.scaled_dot_product_attention(q, k, v)
    errors = [np.linalg.norm(mk.performer_attention(q, k, v, m) - exact) / np.linalg.norm(exact)
              for m in (16, 256, 4096)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.1


def test_wkv_forms_agree_and_match_by_hand():
    rng = np.random.default_rng(0)
    T, d = 9, 4
    w, u = np.exp(rng.normal(size=d)), rng.normal(size=d)
    k, v = rng.normal(size=(2, T, d))
    np.testing.assert_allclose(mk.rwkv_wkv(w, u, k, v, "parallel"), mk.rwkv_wkv(w, u, k, v), rtol=1e-12)
    # two tokens, one channel: wkv_1 = v_1; wkv_2 = (e^{k1} v1 + e^{u+k2} v2) / (e^{k1} + e^{u+k2})
    out = mk.rwkv_wkv([1.0], [0.5], [[0.0], [1.0]], [[2.0], [4.0]])
    b = math.exp(1.5)
    np.testing.assert_allclose(out[:, 0], [2.0, (2.0 + b * 4.0) / (1.0 + b)], rtol=1e-14)


def test_state_elements_of_mamba_2_8b_and_mamba2_2_7b():
    # Mamba 2.8B: d_inner = 2 * 2560 = 5120; SSM 5120 * 16, conv 5120 * (4 - 1)
    assert mk.mamba_state_elements(2560, 16, 2, 4) == 5120 * 16 + 5120 * 3 == 97_280
    assert mk.mamba_state_bytes(2560) == 2 * 97_280
    # Mamba-2 2.7B: 80 heads of 64, d_state 128; conv over 5120 + 2 * 128 channels
    assert mk.mamba2_state_elements(2560) == 80 * 64 * 128 + (5120 + 256) * 3 == 671_488
    assert mk.mamba2_state_bytes(2560, fmt="fp32") == 4 * 671_488
    # Qwen3-Next's Gated DeltaNet: 32 value heads of 128 x 128; conv over 2 * 16 * 128 + 32 * 128
    assert mk.gated_deltanet_state_elements(16, 32, 128, 128) == 32 * 128 * 128 + (4096 + 4096) * 3


def test_jamba_kv_cache_at_256k_is_jambas_4gb():
    # Jamba (arXiv:2403.19887, Table 1): 4GB of KV cache at 256K tokens (4 attention layers, 8 KV heads of 128)
    jamba = mk.HYBRID_MODELS["jamba-v0.1"]
    s = 256 * 1024
    kv = 2 * 4 * 8 * 128 * 2 * s
    assert kv == 4 * 2**30
    assert jamba.cache_bytes(s) == kv + 28 * 2 * (8192 * 16 + 8192 * 3)


def test_pure_ssm_state_does_not_grow():
    mamba = mk.HYBRID_MODELS["mamba-2.8b"]
    assert mamba.cache_bytes(4096) == mamba.cache_bytes(131072) == 64 * 2 * 97_280


def test_nemotron_pattern_has_four_attention_layers_of_52():
    pattern = mk.NEMOTRON_H_8B_PATTERN
    assert len(pattern) == 52 and pattern.count("*") == 4 and pattern.count("M") == 24 and pattern.count("-") == 24


def test_recall_is_exact_for_one_pair_and_degrades_past_the_state_size():
    assert mk.associative_recall_error(1, 16) < 1e-12  # a unit key reads its own value back exactly
    errors = [mk.associative_recall_error(n, 64) for n in (8, 64, 512)]
    assert errors[0] < errors[1] < errors[2]
    assert errors[2] > 2  # eight pairs per dimension: the readout is dominated by the others


@pytest.mark.parametrize("call, match", [
    (lambda: mk.selective_scan(np.ones((3, 2)), np.ones((3, 3)), -np.ones((2, 4)), np.ones((3, 4)),
                               np.ones((3, 4))), "expected x and delta of shape"),
    (lambda: mk.selective_scan(np.ones((3, 2)), np.ones((3, 2)), -np.ones((2, 4)), np.ones((3, 5)),
                               np.ones((3, 5))), "expected B and C of shape"),
    (lambda: mk.selective_scan_step(np.zeros((2, 3)), np.ones(2), np.ones(2), -np.ones((2, 4)), np.ones(4),
                                    np.ones(4)), "state must have A's shape"),
    (lambda: mk.ssd_quadratic(np.ones((3, 2)), np.ones(4), -1.0, np.ones((3, 2)), np.ones((3, 2))),
     "expected x"),
    (lambda: mk.favor_features(np.ones((2, 4)), np.ones((3, 5))), "projection must have shape"),
    (lambda: mk.orthogonal_gaussian(0, 4), "num_features must be a positive integer"),
    (lambda: mk.rwkv_wkv(np.ones(2), np.ones(2), np.ones((3, 2)), np.ones((3, 2)), "chunked"), "form must be one of"),
    (lambda: mk.rwkv_wkv(np.ones(2), np.ones(3), np.ones((3, 2)), np.ones((3, 2))), "expected w and u of shape"),
    (lambda: mk.rwkv_wkv(np.zeros(2), np.ones(2), np.ones((3, 2)), np.ones((3, 2))), "decay rates w must be positive"),
    (lambda: mk.mamba2_state_elements(100, headdim=64), "must be divisible by headdim"),
    (lambda: mk.mamba_state_elements(2560, d_state=0), "d_state must be a positive integer"),
    (lambda: mk.HYBRID_MODELS["jamba-v0.1"].cache_bytes(0), "context_len must be a positive integer"),
    (lambda: mk.associative_recall_error(0, 4), "num_pairs must be a positive integer"),
])
def test_errors_name_the_rule(call, match):
    with pytest.raises(ValueError, match=match):
        call()
