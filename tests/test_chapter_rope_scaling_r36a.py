"""Section rope_scaling-yarn-vs-ntk-no-finetune of "Stretching RoPE": NTK-aware's out-of-bound slow pairs.

Recomputed from the formulas, not through mha_kit: RoPE frequencies base ** (-2i / r); PI divides them by s;
NTK-aware raises the base to b * s ** (r / (r - 2)) (Peng et al. 2023, eq. 16); YaRN's ramp as in the authors'
find_correction_range (floor / ceil of the pair that turns beta_fast = 32 / beta_slow = 1 times in L), and
sqrt(1/t) = 0.1 ln s + 1 (eq. 22). Table 1's perplexities are the paper's.
"""
import math
import re

import numpy as np
import pytest

import chapter_outputs

R, BASE, L, S = 128, 10000.0, 4096, 4
NB = chapter_outputs.notebook("rope_scaling")
ANGLES = chapter_outputs.printed(NB, "nf_seen = nf_theta")
TABLE1 = chapter_outputs.printed(NB, "nf_table1 = {")
BOUNDS = chapter_outputs.printed(NB, "nf_s_needed =")
SETUPS = chapter_outputs.printed(NB, "def nf_setup(")
THETA = BASE ** (-np.arange(R // 2) * 2.0 / R)


def ntk(s):
    return (BASE * s ** (R / (R - 2))) ** (-np.arange(R // 2) * 2.0 / R)


def yarn(s):
    def pair(rot):
        return R * math.log(L / (2 * math.pi * rot)) / (2 * math.log(BASE))
    low, high = max(math.floor(pair(32)), 0), min(math.ceil(pair(1)), R - 1)
    ramp = np.clip((np.arange(R // 2) - low) / (high - low), 0, 1)
    gain = (0.1 * math.log(s) + 1) ** 2 if s > 1 else 1.0
    return THETA * (1 - ramp) + THETA / s * ramp, gain


SEEN = THETA * L
PARTIAL = SEEN < 2 * np.pi
REACH = {"PI": THETA / S * S * L, "NTK-aware": ntk(S) * S * L, "YaRN": yarn(S)[0] * S * L}


def test_slow_pairs_and_out_of_bound_counts():
    assert int(PARTIAL.sum()) == 18 and np.flatnonzero(PARTIAL)[0] == 46
    assert "18 (pairs 46 to 63)" in ANGLES
    out = {m: np.flatnonzero(PARTIAL & (REACH[m] > SEEN * (1 + 1e-9))) for m in REACH}
    assert out["PI"].size == 0 and out["YaRN"].size == 0
    assert list(out["NTK-aware"]) == list(range(46, 63))  # every slow pair but the slowest
    worst = (REACH["NTK-aware"] / SEEN)[out["NTK-aware"]].max()
    assert worst == pytest.approx(S ** (1 - 2 * 46 / (R - 2)))
    assert f"17 (pairs 46-62, by up to {worst:.2f}x)" in ANGLES
    assert chapter_outputs.glued(NB, "nf_ntk_out") == "17"
    assert chapter_outputs.glued(NB, "nf_ntk_out_62") == f"{S ** (1 - 2 * 62 / (R - 2)):.3f}"


@pytest.mark.parametrize("i", (20, 44, 45, 46, 50, 55, 60, 62, 63))
def test_angle_row(i):
    row = next(line for line in ANGLES.splitlines() if re.match(rf"\s*{i}\s", line))
    nums = [float(x.replace(",", "")) for x in row.split()]
    assert len(nums) == 6  # pair, wavelength and the four columns the zip below checks
    assert nums[1] == pytest.approx(2 * np.pi / THETA[i], abs=0.51)
    for got, want in zip(nums[2:], (SEEN[i], REACH["PI"][i], REACH["NTK-aware"][i], REACH["YaRN"][i])):
        assert got == pytest.approx(want, abs=0.0051)


def test_table1_gaps_and_ntk_base():
    pi, ntk_ppl = (3.92, 3.51, 3.51, 3.34, 8.07), (4.20, 3.75, 3.74, 3.59, 6.24)
    gaps = [round(b - a, 2) for a, b in zip(pi, ntk_ppl)]
    assert all(g > 0 for g in gaps[:4]) and gaps[4] < 0  # worse inside the fine-tuned 8K, better at 10K
    printed = [float(line.split()[-1]) for line in TABLE1.splitlines()[1:6]]
    assert printed == gaps
    assert chapter_outputs.glued(NB, "nf_ntk_base_s2") == f"{BASE * 2 ** (R / (R - 2)):,.0f}" == "20,221"


def test_in_bounds_length_and_needed_scale():
    reach = L * S ** (2 * 46 / (R - 2))
    need = S ** ((R - 2) / (2 * 46))
    assert chapter_outputs.glued(NB, "nf_in_bounds") == f"{reach:,.0f}"
    assert chapter_outputs.glued(NB, "nf_s_needed") == f"{need:.2f}"
    assert reach < S * L and need > S


def test_static_and_dynamic_setups():
    rows = {int(line.split()[0].replace(",", "")): re.findall(r"(\d+) / (\d+\.\d+)", line)
            for line in SETUPS.splitlines()[2:] if re.match(r"\s*[\d,]+\s", line)}
    assert sorted(rows) == [1024, 4096, 8192, 16384]
    for n, cells in rows.items():
        s_dyn = max(1.0, n / L)
        setups = ((ntk(S), 1.0), (ntk(s_dyn), 1.0), yarn(S), yarn(s_dyn))
        assert len(cells) == len(setups) == 4, (n, cells)  # a short row must not pass the zip below
        for (moved, gain), (inv, want_gain) in zip(cells, setups):
            assert int(moved) == int((~np.isclose(inv, THETA, rtol=1e-12, atol=0.0)).sum())
            assert float(gain) == pytest.approx(want_gain, abs=0.0006)
    assert rows[1024][1] == ("0", "1.000") and rows[1024][3] == ("0", "1.000")  # dynamic: the trained model


def test_vllm_dynamic_is_static():
    # vLLM's DynamicNTKScalingRotaryEmbedding: cache of s * L positions; base from max_len / L = s
    old = BASE * (S * S - (S - 1)) ** (R / (R - 2))  # v0.15.0: s * max_len / L - (s - 1) = s^2 - s + 1
    assert chapter_outputs.glued(NB, "nf_vllm_old_base") == f"{old:,.0f}"
    ntk_s4 = BASE * S ** (R / (R - 2))
    assert chapter_outputs.glued(NB, "nf_ntk_base_s4") == f"{ntk_s4:,.0f}"
    assert old > ntk_s4  # stretched beyond plain NTK-aware at the same s
