"""mha_kit.attention_extras against Swin Eq. (1)-(2), Abnar & Zuidema's rollout and the method formulas."""
import numpy as np
import pytest

import mha_kit as mk


def test_swin_equations_stage1():
    # Swin-T stage 1: 56 x 56 patches, C = 96, M = 7 (Liu et al. 2021, sec. 3.2 and 3.3)
    g, w = mk.swin_attention_flops(56, 56, 96, 7)
    hw = 56 * 56
    assert g == 4 * hw * 96**2 + 2 * hw**2 * 96
    assert w == 4 * hw * 96**2 + 2 * 7**2 * hw * 96


def test_rollout_two_layers_by_hand():
    a1 = np.array([[1.0, 0.0], [0.5, 0.5]])
    a2 = np.array([[0.0, 1.0], [1.0, 0.0]])
    m1 = 0.5 * a1 + 0.5 * np.eye(2)
    m2 = 0.5 * a2 + 0.5 * np.eye(2)
    np.testing.assert_allclose(mk.attention_rollout([a1, a2]), m2 @ m1)
    np.testing.assert_allclose(mk.attention_rollout([a1, a2]).sum(axis=1), 1.0)


def test_efficient_entries():
    e = mk.efficient_attention_entries(4096, k=256, landmarks=64)
    assert e["full"] == 4096**2 and e["Linformer"] == 4096 * 256
    assert e["Nystromformer"] == 2 * 4096 * 64 + 64**2


@pytest.mark.parametrize("call, match", [
    (lambda: mk.swin_attention_flops(56, 56, 96, 5), "window must divide h and w"),
    (lambda: mk.attention_rollout(np.ones((2, 3))), r"shape \(L, n, n\)"),
    (lambda: mk.efficient_attention_entries(10, k=0), "k must be a positive integer"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
