"""Section positions-rope-decay-proof of "Where positions come from": RoFormer's long-term decay bound.

Recomputed without mha_kit: theta_i = 10000 ** (-2i / d) (RoFormer §3.2.2),
|S_j|^2 = (sum cos)^2 + (sum sin)^2 over the first j pairs (§3.4.3, Eqs. (36)-(37)), and the score of a
query and a key through explicit 2 x 2 rotations of the half-split pairs (i, i + d/2), real numbers only;
the Abel-summation check alone uses complex h.
"""
import re

import numpy as np
import pytest

import chapter_outputs

D, BASE = 128, 10000.0
THETA = BASE ** (-np.arange(D // 2) * 2.0 / D)
NB = chapter_outputs.notebook("positions")
BOUND_OUT = chapter_outputs.printed(NB, "rel_bound = np.abs(partial)")
PAIR_OUT = chapter_outputs.printed(NB, "h_qk = (q[:64]")


def relative_bound(distance):
    angles = distance * THETA
    s_abs = np.hypot(np.cumsum(np.cos(angles)), np.cumsum(np.sin(angles)))  # |S_1| .. |S_{d/2}|
    return s_abs.sum() / (D // 2)


def rotated_score(q, k, distance):
    """q at position `distance`, k at 0: rotate each pair (x_i, x_{i+d/2}) of q by distance * theta_i."""
    c, s = np.cos(distance * THETA), np.sin(distance * THETA)
    q1, q2 = q[: D // 2], q[D // 2:]
    return float(np.dot(q1 * c - q2 * s, k[: D // 2]) + np.dot(q1 * s + q2 * c, k[D // 2:]))


@pytest.mark.parametrize("distance", [0, 16, 64, 256, 1024, 4096])
def test_printed_rows(distance):
    row = re.search(rf"^\s*{distance:,}\s+([\d.]+)$", BOUND_OUT, re.M)
    assert row and float(row.group(1)) == pytest.approx(relative_bound(distance), abs=0.005)


def test_start_is_mean_of_1_to_64_and_first_half_crossing():
    assert relative_bound(0) == pytest.approx((D // 2 + 1) / 2)
    bounds = [relative_bound(x) for x in range(4097)]
    half = next(x for x, b in enumerate(bounds) if b < bounds[0] / 2)
    assert f"below half its start ({bounds[0]:.2f}): {half}\n" in BOUND_OUT
    rises = sum(b1 > b0 for b0, b1 in zip(bounds, bounds[1:]))
    assert f"the bound itself rises: {rises} of 4096" in BOUND_OUT
    assert chapter_outputs.glued(NB, "rpd_half") == str(half) == "16"
    assert bounds[4096] > bounds[1024]  # the bound stops falling: the text says so


def test_abel_identity_on_another_h():
    rng = np.random.default_rng(7)
    h = np.append(rng.standard_normal(D // 2) + 1j * rng.standard_normal(D // 2), 0)  # h_{d/2} = 0
    for x in (1, 37, 999):
        e = np.exp(1j * x * THETA)
        S = np.concatenate([[0], np.cumsum(e)])
        lhs = (h[:-1] * e).sum()
        rhs = -(S[1:] * (h[1:] - h[:-1])).sum()
        assert abs(lhs - rhs) < 1e-9
        assert abs(lhs) <= np.abs(np.diff(h)).max() * np.abs(S[1:]).sum()
    assert "identity holds (difference below 1e-09)" in BOUND_OUT


def test_random_pair_through_rotations():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal(D), rng.standard_normal(D)
    scores = np.array([rotated_score(q, k, x) for x in range(1001)])
    for x in (0, 1, 10, 100, 1000):
        assert f"distance {x:>5,}: score {scores[x]:7.2f}" in PAIR_OUT
    rises = int((np.diff(scores) > 0).sum())
    far = next(x for x in range(1, 1001) if abs(scores[x]) > abs(scores[0]))
    assert f"the score rises: {rises} of 1,000" in PAIR_OUT
    assert f"above |score at 0| ({abs(scores[0]):.2f}): {far}" in PAIR_OUT
    h = np.append((q[:64] + 1j * q[64:]) * (k[:64] - 1j * k[64:]), 0)
    bound = np.abs(np.diff(h)).max() * np.array([relative_bound(x) * (D // 2) for x in range(1001)])
    assert np.all(np.abs(scores) <= bound) and "at all 1,001 distances: True" in PAIR_OUT
    assert f"the bound is {bound[0] / abs(scores[0]):,.0f}x |score|" in PAIR_OUT
    assert 0 < rises < 1000  # not monotone


def test_glued_values_match_recomputation():
    assert chapter_outputs.glued(NB, "rpd_1024") == f"{relative_bound(1024):.1f}"
    assert chapter_outputs.glued(NB, "rpd_4096") == f"{relative_bound(4096):.1f}"
    assert chapter_outputs.glued(NB, "rpd_start") == f"{relative_bound(0):.1f}"


def test_bound_is_spiky_and_its_floor_keeps_sinking():
    bounds = np.array([relative_bound(x) for x in range(4097)])
    rises_early = int((np.diff(bounds[:1025]) > 0).sum())
    first_rise = next(x for x in range(1, 4097) if bounds[x] > bounds[x - 1])
    mid = 128 + int(np.argmax(bounds[128:1024]))
    far = 1024 + int(np.argmax(bounds[1024:]))
    low = int(np.argmin(bounds))
    assert chapter_outputs.glued(NB, "rpd_rises_early") == str(rises_early)
    assert chapter_outputs.glued(NB, "rpd_first_rise") == str(first_rise)
    assert chapter_outputs.glued(NB, "rpd_64") == f"{bounds[64]:.1f}"
    assert chapter_outputs.glued(NB, "rpd_spike_mid") == f"{bounds[mid]:.1f}"
    assert chapter_outputs.glued(NB, "rpd_spike_mid_at") == str(mid)
    assert chapter_outputs.glued(NB, "rpd_spike_far") == f"{bounds[far]:.1f}"
    assert chapter_outputs.glued(NB, "rpd_spike_far_at") == f"{far:,}"
    assert chapter_outputs.glued(NB, "rpd_floor") == f"{bounds[low]:.1f}"
    assert chapter_outputs.glued(NB, "rpd_floor_at") == f"{low:,}"
    # what the text claims: not monotone early, spikes above the value at 64, a floor below the value at 1,024
    assert 0 < rises_early < 1024 and bounds[mid] > bounds[64] and bounds[far] > bounds[64]
    assert low > 1024 and bounds[low] < bounds[1024]
