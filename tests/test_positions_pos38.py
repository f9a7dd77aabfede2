"""xPos, partial RoPE and p-RoPE in mha_kit.positions, checked against their primary sources.

xPos: Sun et al. 2023 (arXiv:2212.10554) and torchscale's ``XPOS`` (scale
``(arange(0, d, 2) + 0.4 d) / (1.4 d)``, ``scale_base`` 512, query ``scale ** (p / 512)``, key
``scale ** (-p / 512)``). Partial RoPE: transformers' ``int(head_dim * partial_rotary_factor)`` and
the configs of GPT-NeoX-20B, GPT-J-6B, Phi-1 and Phi-2. p-RoPE: Barbero et al. 2025 (the lowest
frequencies truncated).
"""
import numpy as np
import pytest

import mha_kit as mk


def _complex_xpos_score(q, k, m, n, base=10000.0, scale_base=512.0, gamma=0.4):
    """The relative form written out: Re sum_j q_j conj(k_j) e^{i (m - n) theta_j} zeta_j^{(m - n)/scale_base}."""
    r = q.size
    j = np.arange(r // 2)
    theta = base ** (-2.0 * j / r)
    zeta = (2.0 * j / r + gamma) / (1.0 + gamma)
    qz = q[: r // 2] + 1j * q[r // 2:]  # half-split pairs (j, j + r/2)
    kz = k[: r // 2] + 1j * k[r // 2:]
    return float(np.real(np.sum(qz * np.conj(kz) * np.exp(1j * (m - n) * theta) * zeta ** ((m - n) / scale_base))))


def test_xpos_zeta_matches_torchscale_formula():
    d = 8
    torchscale = (np.arange(0, d, 2) + 0.4 * d) / (1.4 * d)
    np.testing.assert_allclose(mk.xpos_zeta(d), torchscale, rtol=0, atol=1e-15)
    assert mk.xpos_zeta(8)[0] == pytest.approx(3.2 / 11.2)  # fastest pair: gamma / (1 + gamma)
    assert mk.xpos_zeta(128)[-1] == pytest.approx((126 / 128 + 0.4) / 1.4)


@pytest.mark.parametrize("m, n", [(5, 2), (700, 100), (3000, 3000), (40, 41)])
def test_xpos_score_is_the_relative_form(m, n):
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal(32), rng.standard_normal(32)
    got = mk.xpos_scores(q, k, [m], [n])[0, 0]
    assert got == pytest.approx(_complex_xpos_score(q, k, m, n), rel=1e-10, abs=1e-10)


def test_xpos_depends_on_distance_only_and_decays_against_rope():
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal(64), rng.standard_normal(64)
    shifted = mk.xpos_scores(q, k, [10, 1010, 50010], [4, 1004, 50004])
    assert np.allclose(np.diag(shifted), shifted[0, 0], rtol=1e-9)
    ones = np.ones(64)  # every pair aligned: RoPE's sum of cosines, each damped by zeta^(t/512)
    t = 2048
    rope_score = mk.rope_scores(ones, ones, [t], [0])[0, 0]
    xpos_score = mk.xpos_scores(ones, ones, [t], [0])[0, 0]
    theta = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    expected = 2 * np.sum(np.cos(t * theta) * mk.xpos_zeta(64) ** (t / 512))
    assert xpos_score == pytest.approx(expected, rel=1e-10)
    assert xpos_score != pytest.approx(rope_score, rel=1e-3)
    distances = np.arange(4097)  # the score's ripples: xPos damps the fast pairs that cause them
    rises_rope = int((np.diff(mk.rope_scores(ones, ones, distances, [0])[:, 0]) > 0).sum())
    rises_xpos = int((np.diff(mk.xpos_scores(ones, ones, distances, [0])[:, 0]) > 0).sum())
    assert rises_xpos < rises_rope
    assert mk.xpos_scores(ones, ones, [0], [0])[0, 0] == pytest.approx(64.0)  # distance 0: no decay


def test_xpos_errors():
    with pytest.raises(ValueError, match="must be even"):
        mk.xpos_zeta(7)
    with pytest.raises(ValueError, match="gamma must be a positive number"):
        mk.xpos_zeta(8, gamma=0)
    with pytest.raises(ValueError, match="scale_base must be a positive number"):
        mk.xpos(np.ones((1, 8)), [0], scale_base=-1)
    with pytest.raises(ValueError, match="same shape"):
        mk.xpos_scores(np.ones(8), np.ones(6), [0], [0])


@pytest.mark.parametrize("head_dim, factor, expected", [
    (96, 0.25, 24),  # GPT-NeoX-20B: 6144 / 64 heads, rotary_pct 0.25
    (64, 0.5, 32),  # Phi-1: 2048 / 32 heads, partial_rotary_factor 0.5
    (80, 0.4, 32),  # Phi-2: 2560 / 32 heads, partial_rotary_factor 0.4
    (128, 1.0, 128),  # full RoPE
])
def test_partial_rotary_dims(head_dim, factor, expected):
    assert mk.partial_rotary_dims(head_dim, factor) == expected


def test_partial_rotary_dims_errors():
    with pytest.raises(ValueError, match=r"must be a number in \(0, 1\]"):
        mk.partial_rotary_dims(64, 0)
    with pytest.raises(ValueError, match=r"must be a number in \(0, 1\]"):
        mk.partial_rotary_dims(64, 1.5)
    with pytest.raises(ValueError, match="must be even and at least 2"):
        mk.partial_rotary_dims(10, 0.5)  # 5 dimensions cannot form pairs


def test_partial_rope_leaves_the_rest_alone_and_splits_the_score():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 96))
    out = mk.partial_rope(x, [0, 7, 900], 24)
    np.testing.assert_array_equal(out[:, 24:], x[:, 24:])
    np.testing.assert_allclose(out[:, :24], mk.rope(x[:, :24], [0, 7, 900]), rtol=0, atol=0)
    q, k = rng.standard_normal(96), rng.standard_normal(96)
    for m, n in ((10, 3), (5000, 4993)):
        score = mk.partial_rope(q[None], [m], 24) @ mk.partial_rope(k[None], [n], 24).T
        rotary = mk.rope_scores(q[:24], k[:24], [m], [n])[0, 0]
        assert score[0, 0] == pytest.approx(rotary + q[24:] @ k[24:], rel=1e-10)


def test_partial_rope_errors():
    with pytest.raises(ValueError, match="must be even and at most the head size"):
        mk.partial_rope(np.ones((2, 8)), [0, 1], 10)
    with pytest.raises(ValueError, match="must be even and at most the head size"):
        mk.partial_rope(np.ones((2, 8)), [0, 1], 3)


def test_p_rope_keeps_the_fastest_pairs():
    full = mk.p_rope_inv_freq(128, 1.0)
    np.testing.assert_allclose(full, 10000.0 ** (-np.arange(0, 128, 2) / 128), rtol=1e-15)
    quarter = mk.p_rope_inv_freq(128, 0.25)
    assert int((quarter > 0).sum()) == 16  # 0.25 of 64 pairs
    np.testing.assert_array_equal(quarter[:16], full[:16])
    x = np.random.default_rng(6).standard_normal((1, 128))
    rotated = mk.rope(x, [12345], inv_freq=quarter)
    untouched = np.r_[np.arange(16, 64), np.arange(64 + 16, 128)]  # pairs 16..63 in the half split
    np.testing.assert_array_equal(rotated[0, untouched], x[0, untouched])
    with pytest.raises(ValueError, match=r"fraction must be a number in \(0, 1\]"):
        mk.p_rope_inv_freq(128, 0.0)
    with pytest.raises(ValueError, match="must be even"):
        mk.p_rope_inv_freq(127, 0.5)


def test_partial_rope_records():
    records = mk.PARTIAL_ROPE
    assert (records["gpt-neox-20b"].head_dim, records["gpt-neox-20b"].rotary_dims) == (96, 24)
    assert (records["gpt-j-6b"].head_dim, records["gpt-j-6b"].rotary_dims) == (256, 64)
    assert (records["phi-2"].head_dim, records["phi-2"].rotary_dims) == (80, 32)
    assert records["phi-2"].fraction == pytest.approx(0.4)
    assert records["deepseek-v3.2-indexer"].fraction == 0.5
    v3 = mk.MODEL_FACTS["deepseek-v3"].config
    assert (v3.qk_rope_head_dim, v3.qk_nope_head_dim + v3.qk_rope_head_dim) == (64, 192)
    with pytest.raises(ValueError, match="must be even and at most head_dim"):
        mk.PartialRope("x", "X", 64, 66, "k", "s")


# --- the chapters' numbers, recomputed from the formulas written out ----------------------------


def test_chapter_partial_rope_ladders():
    """positions-partial-rope: a quarter of a 128-dim head, the NeoX way and the p-RoPE way."""
    own = 10000.0 ** (-np.arange(0, 32, 2) / 32)  # transformers: 32 rotated dims, their own ladder
    prope = 10000.0 ** (-np.arange(0, 32, 2) / 128)  # p-RoPE: the 16 fastest pairs of the 128-dim ladder
    full = 10000.0 ** (-np.arange(0, 128, 2) / 128)
    assert round(2 * np.pi / own[-1]) == 35_333
    assert round(2 * np.pi / prope[-1]) == 54
    assert round(2 * np.pi / full[-1]) == 54_410
    assert [int((2 * np.pi / f > 8192).sum()) for f in (full, own, prope)] == [14, 3, 0]
    assert 128 - 64 == 64 and 64 / 192 == pytest.approx(1 / 3)  # MLA: 64 of 128 + 64 rotate


def test_chapter_temperatures():
    """rope_scaling-yarn-temperature: YaRN's (0.1 ln s + 1)^2 and Llama 4's 1 + 0.1 ln(floor((p + 1)/8192) + 1)."""
    assert (0.1 * np.log(4) + 1) ** 2 == pytest.approx(1.2965, abs=5e-5)
    assert (0.1 * np.log(32) + 1) ** 2 == pytest.approx(1.813, abs=5e-4)
    assert 1 + 0.1 * np.log(1_048_576 // 8192 + 1) == pytest.approx(1.486, abs=5e-4)
    assert 1 + 0.1 * np.log(32_768 // 8192 + 1) == pytest.approx(1.161, abs=5e-4)
    assert np.log(1_048_576) / np.log(32_768) == pytest.approx(20 / 15)


def test_chapter_xpos_numbers():
    """position_encodings-xpos: decay of the fastest pair, ripples, overflow of the uncentred key factor."""
    zeta0 = 0.4 / 1.4
    assert zeta0 ** (2048 / 512) == pytest.approx(0.0067, abs=5e-5)
    assert zeta0 ** (8192 / 512) == pytest.approx(2e-9, rel=0.1)
    fp16_max, bf16_max = 65504.0, (2 - 2.0 ** -7) * 2.0 ** 127
    assert round(512 * np.log(fp16_max) / np.log(1 / zeta0)) == 4_532
    assert round(512 * np.log(bf16_max) / np.log(1 / zeta0)) == 36_259
    t = np.arange(4097)[:, None]
    j = np.arange(64)
    theta = 10000.0 ** (-2.0 * j / 128)
    zeta = (2.0 * j / 128 + 0.4) / 1.4
    rope = (2 * np.cos(t * theta)).sum(axis=1)
    xpos = (2 * np.cos(t * theta) * zeta ** (t / 512)).sum(axis=1)
    assert int((np.diff(rope) > 0).sum()) == 1_992
    assert int((np.diff(xpos) > 0).sum()) == 1_563


def test_chapter_window_distances():
    """position_encodings-sparse-windows: largest distance a query scores under each scheme."""
    assert mk.MODEL_FACTS["mistral-7b"].sliding_window - 1 == 4_095
    assert mk.LAYER_LAYOUTS["gemma-3"].window - 1 == 1_023
    assert mk.ROPE_LAYOUTS["llama-4-scout"].attention_chunk_size - 1 == 8_191
    assert 4 + 1_020 - 1 == 1_023  # StreamingLLM's 4 sinks + 1,020 recent, positions within the cache
