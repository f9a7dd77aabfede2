"""Tests for mha_kit.quant_practice against their sources: GPTQ's reference steps (IST-DASLab/gptq
gptq.py, GPTQ.fasterquant), llama.cpp's importance-weighted scale fit, Sylvester's Hadamard matrix and
the standard errors of an accuracy and of a paired difference (Miller 2024)."""
import math

import numpy as np
import pytest

import mha_kit as mk


def _rtn_rows(w, bits):
    # GPTQ's grid (quant.py): per row, min-max stretched to hold 0, scale = range / maxq, zero = round(-min / scale)
    lo, hi = np.minimum(w.min(axis=1, keepdims=True), 0), np.maximum(w.max(axis=1, keepdims=True), 0)
    scale = (hi - lo) / (2**bits - 1)
    zero = np.rint(-lo / scale)
    return scale * (np.clip(np.rint(w / scale) + zero, 0, 2**bits - 1) - zero)


def test_diagonal_hessian_leaves_nothing_to_compensate():
    # with independent inputs H is diagonal, U has no off-diagonal entries, so GPTQ is plain rounding
    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 16))
    h = np.diag(rng.uniform(0.5, 2.0, size=16))
    q, g_idx = mk.gptq_hessian_quantize(w, h, 3)
    np.testing.assert_allclose(q, _rtn_rows(w, 3), atol=1e-12)
    assert g_idx.tolist() == [0] * 16


def test_matches_the_column_loop_of_gptq_quantize():
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(6, 12)), rng.normal(size=(40, 12)) @ rng.normal(size=(12, 12))
    q, _ = mk.gptq_hessian_quantize(w, 2 * x.T @ x, 4)
    np.testing.assert_allclose(q, mk.gptq_quantize(w, x, 4), atol=1e-12)


def test_gptq_moves_later_columns_to_cancel_the_first_error():
    # hand-worked, 2 bits on [0, 1] (codes 0, 1/3, 2/3, 1): inputs 0 and 1 move together, input 2 alone.
    # Rounding 0.25 up to 1/3 errs by -1/12; the OBQ update moves 0.55 by -1/12 * h01/h11 to about 0.467,
    # which rounds down to 1/3 where plain rounding gave 2/3, so the error along (1, 1) shrinks.
    w = np.array([[0.25, 0.55, 1.0]])
    h = np.array([[2.0, 1.999, 0.0], [1.999, 2.0, 0.0], [0.0, 0.0, 2.0]])
    q, _ = mk.gptq_hessian_quantize(w, h, 2, damp=0.0)
    np.testing.assert_allclose(q, [[1 / 3, 1 / 3, 1.0]], atol=1e-12)
    np.testing.assert_allclose(_rtn_rows(w, 2), [[1 / 3, 2 / 3, 1.0]], atol=1e-12)
    x = np.array([1.0, 1.0, 0.0])  # the direction the first two inputs take
    assert abs((q - w) @ x).item() < abs((_rtn_rows(w, 2) - w) @ x).item()


def test_dead_input_gets_zero_weight_and_no_failure():
    rng = np.random.default_rng(2)
    w, x = rng.normal(size=(4, 8)), rng.normal(size=(32, 8))
    x[:, 3] = 0.0
    h = 2 * x.T @ x
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(h)  # the raw Hessian is only semi-definite
    q, _ = mk.gptq_hessian_quantize(w, h, 4)
    assert np.all(np.abs(q[:, 3]) < 0.5 * np.abs(w).max() / 15 + 1e-12)  # rounds 0 to the nearest code


def test_no_damping_on_a_singular_hessian_fails():
    x = np.ones((3, 4))  # rank 1, no dead column
    with pytest.raises(np.linalg.LinAlgError):
        mk.gptq_hessian_quantize(np.ones((2, 4)), 2 * x.T @ x, 4, damp=0.0)


def test_act_order_groups_follow_the_processing_order():
    h = np.diag([1.0, 5.0, 3.0, 8.0, 2.0, 7.0, 4.0, 6.0])
    w = np.random.default_rng(3).normal(size=(4, 8))
    _, g_idx = mk.gptq_hessian_quantize(w, h, 4, group_size=2, act_order=True)
    perm = np.argsort(-np.diag(h))  # 3, 5, 7, 1, 6, 2, 4, 0
    expected = np.empty(8, dtype=int)
    expected[perm] = np.arange(8) // 2
    assert g_idx.tolist() == expected.tolist()
    _, g_static = mk.gptq_hessian_quantize(w, h, 4, group_size=2, act_order=True, static_groups=True)
    assert g_static.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_gptq_hessian_quantize_errors():
    w, h = np.ones((2, 4)), np.eye(4)
    with pytest.raises(ValueError, match="h must be"):
        mk.gptq_hessian_quantize(w, np.eye(3), 4)
    with pytest.raises(ValueError, match="group_size must divide"):
        mk.gptq_hessian_quantize(w, h, 4, group_size=3)
    with pytest.raises(ValueError, match="damp >= 0"):
        mk.gptq_hessian_quantize(w, h, 4, damp=-0.1)


def test_imatrix_fit_is_optimal_for_its_weights():
    rng = np.random.default_rng(4)
    w, imp = rng.normal(size=(8, 64)), rng.uniform(0, 5, size=64)
    plain, weighted = mk.imatrix_quantize(w, None, 3, 32), mk.imatrix_quantize(w, imp, 3, 32)
    blocks = lambda a: a.reshape(8, 2, 32)  # noqa: E731
    cost = lambda q: np.sum(imp.reshape(1, 2, 32) * (blocks(q) - blocks(w)) ** 2, axis=-1)  # noqa: E731
    assert np.all(cost(weighted) <= cost(plain) + 1e-12)
    np.testing.assert_array_equal(plain, mk.imatrix_quantize(w, np.ones(64), 3, 32))
    step = np.abs(blocks(weighted)).max(axis=-1, keepdims=True) / 3  # every value is a code times the scale
    codes = blocks(weighted) / step
    np.testing.assert_allclose(codes, np.rint(codes), atol=1e-9)


def test_imatrix_quantize_errors():
    with pytest.raises(ValueError, match="multiple of block"):
        mk.imatrix_quantize(np.ones((2, 30)), None, 4, 32)
    with pytest.raises(ValueError, match=">= 0"):
        mk.imatrix_quantize(np.ones((2, 32)), -np.ones(32), 4, 32)
    with pytest.raises(ValueError, match="importance"):
        mk.imatrix_quantize(np.ones((2, 32)), np.ones(31), 4, 32)


def test_hadamard_matches_sylvester_matrix():
    h8 = np.array([[1.0]])
    for _ in range(3):
        h8 = np.kron(np.array([[1.0, 1.0], [1.0, -1.0]]), h8)  # Sylvester: H_2n = [[H, H], [H, -H]]
    x = np.random.default_rng(5).normal(size=(3, 8))
    signs = np.array([1, -1, 1, 1, -1, -1, 1, -1])
    np.testing.assert_allclose(mk.hadamard_rotate(x), x @ h8 / math.sqrt(8), atol=1e-12)
    np.testing.assert_allclose(mk.hadamard_rotate(x, signs), (x * signs) @ h8 / math.sqrt(8), atol=1e-12)


def test_hadamard_spreads_a_spike_and_keeps_norms():
    spike = np.zeros(4096)
    spike[7] = 100.0
    np.testing.assert_allclose(np.abs(mk.hadamard_rotate(spike)), 100.0 / 64.0)
    x = np.random.default_rng(6).normal(size=(2, 64))
    np.testing.assert_allclose(np.linalg.norm(mk.hadamard_rotate(x), axis=1), np.linalg.norm(x, axis=1))


def test_hadamard_errors():
    with pytest.raises(ValueError, match="power of two"):
        mk.hadamard_rotate(np.ones(6))
    with pytest.raises(ValueError, match="signs must be"):
        mk.hadamard_rotate(np.ones(4), np.array([1, 2, 1, 1]))


def test_accuracy_stderr_is_the_binomial_formula():
    assert mk.accuracy_stderr(0.7, 1000) == pytest.approx(math.sqrt(0.7 * 0.3 / 1000), rel=1e-15)
    assert mk.accuracy_stderr(1.0, 50) == 0.0
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\]"):
        mk.accuracy_stderr(1.2, 10)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        mk.accuracy_stderr(0.5, 0)


def test_paired_stderr_equals_the_spread_of_the_differences():
    d = np.array([-1] * 19 + [1] * 11 + [0] * 270)  # 300 questions: 19 lost, 11 gained
    expected = math.sqrt(np.var(d) / 300)  # population variance of the per-question change, over n
    assert mk.paired_diff_stderr(19 / 300, 11 / 300, 300) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="lost and gained"):
        mk.paired_diff_stderr(0.6, 0.5, 100)
