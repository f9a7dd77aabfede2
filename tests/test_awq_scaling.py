"""mha_kit.awq_scale_sweep against AWQ sec. 3.2, Eq. 1-3: the salient error scales as (Delta'/Delta) / s, and a
scaled weight that becomes the group's maximum coarsens the other weights' step."""
import numpy as np
import pytest

import mha_kit as mk


def test_s_one_is_plain_rounding():
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(8, 256)), rng.normal(size=(16, 256))
    r = mk.awq_scale_sweep(w, x, [3, 200], [1.0], bits=3)
    assert r["step_grew"][0] == 0 and r["step_ratio"][0] == 1
    assert r["salient_err"][0] == pytest.approx(1) and r["other_err"][0] == pytest.approx(1)


def test_one_group_by_hand():
    # 3-bit symmetric: step = max|w| / 3. w = [0.3, 3.0, -1.0, 0.5] -> step 1; x = identity picks each error
    w, x = np.array([[0.3, 3.0, -1.0, 0.5]]), np.eye(4)
    r = mk.awq_scale_sweep(w, x, [0], [2.0, 4.0], bits=3, group_size=4)
    # s = 2: Q(0.6) = 1, 1 / 2 - 0.3 = 0.2 against |Q(0.3) - 0.3| = 0.3 (Eq. 3, Delta' = Delta)
    # s = 4: Q(1.2) = 1, 1 / 4 - 0.3 = -0.05
    np.testing.assert_allclose(r["salient_err"], [0.2 / 0.3, 0.05 / 0.3])
    assert r["step_grew"].tolist() == [0.0, 0.0] and r["other_err"].tolist() == [1.0, 1.0]


def test_scaled_weight_becomes_the_max():
    # channel 0 = 1.0 scaled by 4 -> 4.0 > 3.0: Delta' = 4 / 3; the others round on the coarser step
    w, x = np.array([[1.0, 3.0, -1.0, 0.5]]), np.eye(4)
    r = mk.awq_scale_sweep(w, x, [0], [4.0], bits=3, group_size=4)
    assert r["step_grew"][0] == 1.0 and r["step_ratio"][0] == pytest.approx(4 / 3)
    d = 4 / 3
    new = [abs(d * np.rint(v / d) - v) for v in (3.0, -1.0, 0.5)]  # Eq. 1 on the new step
    old = [abs(np.rint(v) - v) for v in (3.0, -1.0, 0.5)]  # on the old step 1
    assert r["other_err"][0] == pytest.approx(np.sqrt(np.sum(np.square(new)) / np.sum(np.square(old))))


@pytest.mark.parametrize("w, x, scales, match", [
    (np.ones((2, 4)), np.ones((3, 5)), [2.0], "x must be"),
    (np.ones((2, 4)), np.ones((3, 4)), [0.5], "scales must be"),
    (np.ones((2, 4)), np.ones((3, 4)), [], "scales must be"),
])
def test_errors(w, x, scales, match):
    with pytest.raises(ValueError, match=match):
        mk.awq_scale_sweep(w, x, [0], scales, group_size=4)
