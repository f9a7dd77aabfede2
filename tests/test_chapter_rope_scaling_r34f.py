"""Section rope_scaling-dynamic-ntk-cache of "Stretching RoPE": keys cached after RoPE under dynamic NTK.

Recomputed from the formulas, not through mha_kit: transformers' dynamic base
b * (f * max(n, L) / L - (f - 1)) ** (r / (r - 2)) (modeling_rope_utils.py, _compute_dynamic_ntk_parameters),
frequencies base ** (-2i / r), and RoPE written as complex multiplication of the half-split pairs
(x[i] + 1j * x[i + r/2]) * exp(1j * angle). vLLM <= 0.15 evaluates the same formula once at f * L.
"""
import re

import numpy as np
import pytest

import chapter_outputs

R, BASE, TRAINED, FACTOR = 128, 10000.0, 4096, 2.0  # Llama 2's head, dynamic NTK with factor 2
OLD, RECENT = TRAINED - 1, 16384 - 16
PAIRS = (0, 1, 8, 16, 32, 48, 63)
NB = chapter_outputs.notebook("rope_scaling")
TABLE = chapter_outputs.printed(NB, "dn_pairs = (")
SCORES = chapter_outputs.printed(NB, "def dn_score(")


def theta(length):
    """(r/2,) frequencies at sequence length ``length``."""
    n = max(length, TRAINED)
    base = BASE * (FACTOR * n / TRAINED - (FACTOR - 1)) ** (R / (R - 2))
    return base ** (-np.arange(R // 2) * 2.0 / R)


def err(pos, written, now):
    return pos * (theta(written) - theta(now))


def score(n, key_pos, key_len):
    q, k = np.random.default_rng(0).standard_normal((2, R))
    zq, zk = q[: R // 2] + 1j * q[R // 2:], k[: R // 2] + 1j * k[R // 2:]
    angle = (n - 1) * theta(n) - key_pos * theta(key_len)
    return float(np.real(zq * np.conj(zk) * np.exp(1j * angle)).sum())


def _rows():
    rows = {}
    for line in TABLE.splitlines()[1:]:
        nums = [float(x.replace(",", "")) for x in re.findall(r"-?[\d,]+\.\d+|^\s*\d+", line)]
        if line.strip()[:1].isdigit() and len(nums) == 7:
            rows[int(nums[0])] = nums[1:]
    return rows


def test_table_has_every_pair():
    assert sorted(_rows()) == list(PAIRS)


@pytest.mark.parametrize("i", PAIRS)
def test_table_row(i):
    wave, s8, s16, e8, e16, erec = _rows()[i]
    t4 = theta(TRAINED)
    assert wave == pytest.approx(2 * np.pi / t4[i], abs=0.051)
    assert s8 == pytest.approx(t4[i] / theta(8192)[i], abs=6e-4)
    assert s16 == pytest.approx(t4[i] / theta(16384)[i], abs=6e-4)
    assert e8 == pytest.approx(err(OLD, TRAINED, 8192)[i], abs=6e-3)
    assert e16 == pytest.approx(err(OLD, TRAINED, 16384)[i], abs=6e-3)
    assert erec == pytest.approx(err(RECENT, RECENT + 1, 16384)[i], abs=6e-3)


def test_first_pair_never_moves_and_slowest_is_slowed_by_the_scale_term():
    # NTK-aware: pair 0 keeps base**0 = 1; the slowest pair is slowed by exactly (f n / L - f + 1): read from the table
    rows = _rows()
    assert rows[0][1:3] == [1.0, 1.0]
    assert rows[63][1:3] == [3.0, 7.0]
    assert theta(TRAINED)[-1] / theta(16384)[-1] == pytest.approx(7.0, rel=1e-12)


def test_slow_pairs_and_largest_errors():
    slow = 2 * np.pi / theta(TRAINED) > TRAINED
    e16 = np.abs(err(OLD, TRAINED, 16384))
    assert int(slow.sum()) == 18
    assert chapter_outputs.glued(NB, "dn_slow_pairs") == "18"
    assert chapter_outputs.glued(NB, "dn_err_slow_16k") == f"{e16[slow].max():.2f}"
    assert chapter_outputs.glued(NB, "dn_err_max_16k") == f"{e16.max():.0f}"
    assert chapter_outputs.glued(NB, "dn_err_recent_max") == f"{np.abs(err(RECENT, RECENT + 1, 16384)).max():.2f}"
    assert e16[slow].max() < 5 < 100 < e16.max()  # the claim: small only in the slow pairs
    # the slowest pair is off by under half a radian, the slow pairs near the 4K boundary by over half a turn
    assert chapter_outputs.glued(NB, "dn_err_slowest_16k") == f"{e16[-1]:.2f}"
    assert e16[-1] < 0.5 < np.pi < e16[slow].max()


def test_scores():
    lines = SCORES.splitlines()[:4]
    cases = [(8192, OLD, TRAINED), (8192, 8192 - 16, 8192 - 15), (16384, OLD, TRAINED), (16384, RECENT, RECENT + 1)]
    for line, (n, pos, written) in zip(lines, cases):
        good, cached = (float(x) for x in re.findall(r"-?\d+\.\d\d", line))
        assert f"{n:,}" in line and f"{pos:,}" in line
        assert good == pytest.approx(score(n, pos, n), abs=6e-3)
        assert cached == pytest.approx(score(n, pos, written), abs=6e-3)
    assert np.sign(score(8192, OLD, 8192)) != np.sign(score(8192, OLD, TRAINED))  # the far score flips
    assert chapter_outputs.glued(NB, "dn_old_8k_ok") == f"{score(8192, OLD, 8192):.2f}"
    assert chapter_outputs.glued(NB, "dn_rec_16k_hf") == f"{score(16384, RECENT, RECENT + 1):.2f}"


def test_delta_rotation_restores_the_key():
    assert chapter_outputs.glued(NB, "dn_delta_rot_err") == "below 1e-12"  # the chapter's max |fixed - fresh|
    assert "== key rotated afresh: True" in SCORES


def test_vllm_static_base_is_transformers_base_at_f_times_l():
    max_len = TRAINED * FACTOR
    vllm = BASE * (FACTOR * max_len / TRAINED - (FACTOR - 1)) ** (R / (R - 2))  # v0.15.0 _compute_cos_sin_cache
    hf = theta(int(max_len))[1] ** (-R / 2)
    assert vllm == pytest.approx(hf, rel=1e-12)
    assert chapter_outputs.glued(NB, "dn_vllm_base") == f"{vllm:,.0f}" == "30,528"
    assert "30,528: True" in SCORES


def test_section_cites_its_sources():
    text = chapter_outputs.section(NB, "rope_scaling-dynamic-ntk-cache", end="rope_scaling-yarn")
    assert "[H]" in text and "[M]" not in text  # the tag of q34_ntk
    assert "perplexity barely" not in text and "not a measured perplexity" in text  # the thread measured none
    for key in ("hfpr24653", "hfdynamicntkcache", "hfdynamicropeupdate", "vllmdynamicntk", "peng2024yarn"):
        assert key in text
