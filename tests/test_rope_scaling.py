"""Tests for mha_kit.rope_scaling: the frequencies of linear, dynamic, YaRN and llama3 RoPE scaling.

Expected values are worked out by hand from the formulas (Chen et al. 2023; the NTK-aware base
change; YaRN, Peng et al. 2023, sec. 3.2 and 3.4, with the ramp in the pair index as transformers
and the YaRN code compute it; Meta's apply_scaling for llama3), with small sizes whose numbers
come out round, and checked against mha_kit. The model records' RoPE fields are checked against
tests/data/model_configs.json.
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk
from mha_kit.rope_scaling import rope_type_of

PROPERTY = settings(max_examples=30, deadline=None)
TOL = dict(rtol=1e-12, atol=0)
FACTS = json.loads((Path(__file__).parent / "data" / "model_configs.json").read_text(encoding="utf-8"))["models"]
LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}


# ---------------------------------------------------------------------------------------------
# Each rope type against numbers worked out by hand
# ---------------------------------------------------------------------------------------------

def test_default_is_plain_rope():
    # r = 4, base 100: theta = 100**0, 100**(-2/4) = 1, 0.1
    inv_freq, factor = mk.rope_inv_freq(4, 100.0)
    np.testing.assert_allclose(inv_freq, [1.0, 0.1], **TOL)
    assert factor == 1.0
    np.testing.assert_allclose(mk.rope_inv_freq(4, 100.0, {"rope_type": "default"})[0], [1.0, 0.1], **TOL)


def test_linear_divides_every_frequency():
    # position interpolation with factor 2: theta = 1, 0.01 -> 0.5, 0.005
    inv_freq, factor = mk.rope_inv_freq(4, 10000.0, {"rope_type": "linear", "factor": 2.0})
    np.testing.assert_allclose(inv_freq, [0.5, 0.005], **TOL)
    assert factor == 1.0


@pytest.mark.parametrize("seq_len, expected", [
    (300, [1.0, 0.002]),  # base * (2 * 300 / 100 - 1)**(4 / 2) = 10000 * 25 = 250000; 250000**-0.5 = 0.002
    (50, [1.0, 0.01]),  # shorter than the trained 100: length taken as 100, base unchanged
    (None, [1.0, 0.01]),  # no length: the trained length
])
def test_dynamic_raises_the_base_with_the_length(seq_len, expected):
    scaling = {"rope_type": "dynamic", "factor": 2.0}
    inv_freq, factor = mk.rope_inv_freq(4, 10000.0, scaling, seq_len=seq_len, max_position_embeddings=100)
    np.testing.assert_allclose(inv_freq, expected, **TOL)
    assert factor == 1.0


def test_dynamic_with_factor_one_is_ntk_aware_scaling():
    # factor 1 at 4x the trained length: base' = base * 4**(r / (r - 2)), bloc97's NTK-aware rule
    r, base = 8, 10000.0
    inv_freq, _ = mk.rope_inv_freq(r, base, {"type": "dynamic", "factor": 1.0}, seq_len=400, max_position_embeddings=100)
    ntk_base = base * 4.0 ** (8 / 6)
    np.testing.assert_allclose(inv_freq, [ntk_base ** (-2 * i / r) for i in range(4)], **TOL)


def test_yarn_ramp_and_temperature_by_hand():
    # r = 8, base 10000, trained L = 1000, factor 4. The pair that turns k times in L sits at
    # r * ln(L / (2 pi k)) / (2 ln base): k = 32 -> 0.70 -> floor 0; k = 1 -> 2.20 -> ceil 3.
    # Ramp over pairs 0..3: 0, 1/3, 2/3, 1; theta = 1, 0.1, 0.01, 0.001.
    # pair 1: (2/3) 0.1 + (1/3) 0.1/4 = 0.075; pair 2: (1/3) 0.01 + (2/3) 0.0025 = 0.005; pair 3: 0.001/4
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1000}
    inv_freq, factor = mk.rope_inv_freq(8, 10000.0, scaling)
    np.testing.assert_allclose(inv_freq, [1.0, 0.075, 0.005, 0.00025], **TOL)
    assert factor == pytest.approx(0.1 * math.log(4.0) + 1.0, rel=1e-15)  # sqrt(1/t), YaRN sec. 3.4


def test_yarn_without_truncation_ramps_between_the_exact_pairs():
    # the same setting with truncate=False: the ramp runs from pair a = 8 ln(1000/(64 pi)) / (2 ln 1e4)
    # to pair b = 8 ln(1000/(2 pi)) / (2 ln 1e4), not from 0 to 3
    a = 8 * math.log(1000 / (64 * math.pi)) / (2 * math.log(10000))
    b = 8 * math.log(1000 / (2 * math.pi)) / (2 * math.log(10000))
    ramp = [min(max((i - a) / (b - a), 0.0), 1.0) for i in range(4)]
    theta = [1.0, 0.1, 0.01, 0.001]
    expected = [(1 - g) * t + g * t / 4 for g, t in zip(ramp, theta)]
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1000, "truncate": False}
    np.testing.assert_allclose(mk.rope_inv_freq(8, 10000.0, scaling)[0], expected, **TOL)


@pytest.mark.parametrize("extra, expected", [
    ({"attention_factor": 1.5}, 1.5),  # given explicitly: used as is
    ({"mscale": 0.707, "mscale_all_dim": 0.707}, 1.0),  # DeepSeek's ratio of equal mscales
    ({"mscale": 1.0, "mscale_all_dim": 0.5}, (0.1 * 1.0 + 1) / (0.1 * 0.5 + 1)),  # factor e: ln = 1
])
def test_yarn_attention_factor_variants(extra, expected):
    scaling = {"type": "yarn", "factor": math.e, "original_max_position_embeddings": 1000, **extra}
    assert mk.rope_inv_freq(8, 10000.0, scaling)[1] == pytest.approx(expected, rel=1e-15)


def test_yarn_reads_the_trained_length_from_max_position_embeddings_when_absent():
    with_key = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1000}
    without = {"type": "yarn", "factor": 4.0}
    np.testing.assert_array_equal(mk.rope_inv_freq(8, 1e4, without, max_position_embeddings=1000)[0],
                                  mk.rope_inv_freq(8, 1e4, with_key)[0])


def test_llama3_bands_by_hand():
    # r = 8, base 10000, L = 1000, low 1, high 4: wavelengths 2 pi / theta = 6.3, 63, 628, 6283.
    # Below L / 4 = 250: kept; above L / 1 = 1000: divided by 8; pair 2 in between with
    # smooth = (L / 628.3 - 1) / (4 - 1) = (10 / (2 pi) - 1) / 3.
    smooth = (10 / (2 * math.pi) - 1) / 3
    expected = [1.0, 0.1, (1 - smooth) * 0.01 / 8 + smooth * 0.01, 0.001 / 8]
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 1000}
    inv_freq, factor = mk.rope_inv_freq(8, 10000.0, scaling)
    np.testing.assert_allclose(inv_freq, expected, **TOL)
    assert factor == 1.0


def meta_apply_scaling(theta, factor=8, low=1, high=4, old_context=8192):
    """Meta's llama3 rule written as its three branches, pair by pair."""
    out = []
    for t in theta:
        wavelength = 2 * math.pi / t
        if wavelength < old_context / high:
            out.append(t)
        elif wavelength > old_context / low:
            out.append(t / factor)
        else:
            smooth = (old_context / wavelength - low) / (high - low)
            out.append((1 - smooth) * t / factor + smooth * t)
    return out


def test_llama31_config_keeps_29_pairs_divides_29_and_blends_6():
    # r = 128, base 500000: pair i has wavelength 2 pi 500000**(i / 64); 2,048 tokens falls
    # between pairs 28 and 29, 8,192 tokens between pairs 34 and 35.
    inv_freq, _ = mk.rope_inv_freq(128, 500000.0, LLAMA31)
    plain, _ = mk.rope_inv_freq(128, 500000.0)
    np.testing.assert_allclose(inv_freq, meta_apply_scaling(plain), **TOL)
    stretch = mk.stretch_per_pair(128, 500000.0, LLAMA31)
    assert int((stretch == 1).sum()) == 29 and int((stretch == 8).sum()) == 29
    assert np.flatnonzero((stretch > 1) & (stretch < 8)).tolist() == [29, 30, 31, 32, 33, 34]


def test_legacy_type_key_and_precedence_of_rope_type():
    legacy = mk.rope_inv_freq(8, 1e4, {"type": "linear", "factor": 4.0})[0]
    np.testing.assert_array_equal(legacy, mk.rope_inv_freq(8, 1e4, {"rope_type": "linear", "factor": 4.0})[0])
    both = {"rope_type": "linear", "type": "yarn", "factor": 4.0}  # transformers reads rope_type first
    np.testing.assert_array_equal(mk.rope_inv_freq(8, 1e4, both)[0], legacy)
    assert rope_type_of(None) == "default" and rope_type_of({"factor": 2.0}) == "default"


# ---------------------------------------------------------------------------------------------
# Properties over random settings
# ---------------------------------------------------------------------------------------------

@PROPERTY
@given(half=st.integers(2, 64), log_base=st.floats(2, 7), factor=st.floats(1, 64),
       trained=st.integers(16, 100_000), rope_type=st.sampled_from(["yarn", "llama3"]))
def test_banded_methods_stretch_between_one_and_the_factor_slow_pairs_most(half, log_base, factor, trained, rope_type):
    scaling = {"rope_type": rope_type, "factor": factor, "original_max_position_embeddings": trained,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    if rope_type == "yarn":
        del scaling["low_freq_factor"], scaling["high_freq_factor"]
    stretch = mk.stretch_per_pair(2 * half, 10.0 ** log_base, scaling)
    assert np.all(stretch >= 1 - 1e-12) and np.all(stretch <= factor * (1 + 1e-12))
    assert np.all(np.diff(stretch) >= -1e-9 * factor)  # pairs ordered fast to slow


@PROPERTY
@given(half=st.integers(2, 64), factor=st.floats(1, 16), ratio=st.floats(1, 32))
def test_dynamic_slows_the_slowest_pair_by_exactly_the_length_term(half, factor, ratio):
    # base' / base = a**(r / (r - 2)) with a = factor * L' / L - factor + 1; the slowest pair
    # (i = r/2 - 1) turns a times slower, the fastest (i = 0) not at all
    r, trained = 2 * half, 1000
    seq_len = int(trained * ratio)
    a = factor * max(seq_len, trained) / trained - factor + 1
    stretch = mk.stretch_per_pair(r, 10000.0, {"type": "dynamic", "factor": factor},
                                  seq_len=seq_len, max_position_embeddings=trained)
    assert stretch[0] == 1.0
    assert stretch[-1] == pytest.approx(a, rel=1e-9)


def test_rope_with_linear_frequencies_reads_position_2m_as_m():
    x = np.random.default_rng(0).standard_normal((5, 16))
    m = np.arange(5)
    linear, _ = mk.rope_inv_freq(16, 10000.0, {"type": "linear", "factor": 2.0})
    np.testing.assert_allclose(mk.rope(x, 2 * m, inv_freq=linear), mk.rope(x, m), rtol=1e-12, atol=1e-12)


def test_rope_attention_factor_scales_the_rotated_vector():
    x = np.random.default_rng(1).standard_normal((3, 8))
    inv_freq, factor = mk.rope_inv_freq(8, 1e4, {"type": "yarn", "factor": 16.0, "original_max_position_embeddings": 64})
    rotated = mk.rope(x, [0, 5, 900], inv_freq=inv_freq, attention_factor=factor)
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=1), factor * np.linalg.norm(x, axis=1), rtol=1e-12)
    scores = mk.rope_scores(x[0], x[1], [7], [3], inv_freq=inv_freq, attention_factor=factor)
    plain = mk.rope_scores(x[0], x[1], [7], [3], inv_freq=inv_freq)
    np.testing.assert_allclose(scores, factor**2 * plain, rtol=1e-12)  # the score scales by its square


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs, message", [
    ((7,), {}, r"^head_dim \(7\) must be even: RoPE turns pairs of dimensions$"),
    ((8, 1e4, {"rope_type": "longrope"}), {}, r"^unknown rope_type 'longrope'; supported: default, linear, dynamic, yarn, llama3$"),
    ((8, 1e4, [("factor", 2.0)]), {}, r"^rope_scaling must be a dict .* or None, got list$"),
    ((8, 1e4, {"type": "linear"}), {}, r"^rope_scaling of rope_type 'linear' needs 'factor', got keys \['type'\]$"),
    ((8, 1e4, {"type": "linear", "factor": 0.5}), {}, r"^rope_scaling\['factor'\] must be at least 1.0, got 0.5$"),
    ((8, 1e4, {"type": "linear", "factor": "2"}), {}, r"^rope_scaling\['factor'\] must be a finite number, got '2'$"),
    ((8, 1e4, {"type": "dynamic", "factor": 2.0}), {}, r"^rope_type 'dynamic' needs max_position_embeddings"),
    ((2, 1e4, {"type": "dynamic", "factor": 2.0}), {"max_position_embeddings": 8},
     r"^rope_type 'dynamic' needs head_dim >= 4 \(the base exponent is r / \(r - 2\)\), got 2$"),
    ((8, 1e4, {"type": "yarn", "factor": 4.0}), {}, r"^rope_type 'yarn' needs the trained context length"),
    ((8, 1e4, {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "truncate": "no"}), {},
     r"^rope_scaling\['truncate'\] must be True or False, got 'no'$"),
    ((8, 1e4, {**LLAMA31, "low_freq_factor": 4.0}), {},
     r"^llama3 scaling needs 0 < low_freq_factor < high_freq_factor, got 4.0 and 4.0$"),
    ((8, 1e4, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0}), {},
     r"^rope_scaling of rope_type 'llama3' needs 'high_freq_factor'"),
    ((8, -1.0), {}, r"^base must be a positive finite number, got -1.0$"),
])
def test_rope_inv_freq_errors(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mk.rope_inv_freq(*args, **kwargs)


def test_rope_rejects_frequencies_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"^expected inv_freq of shape \(4,\) = \(r/2,\) .* got shape \(3,\)$"):
        mk.rope(np.ones((2, 8)), [0, 1], inv_freq=np.ones(3))


# ---------------------------------------------------------------------------------------------
# The model records' RoPE fields
# ---------------------------------------------------------------------------------------------

PRESET_FOR = {"Meta Llama 3 8B": "llama-3-8b", "Meta Llama 3 70B": "llama-3-70b",
              "Meta Llama 3.1 405B": "llama-3.1-405b", "Qwen2.5-7B": "qwen2.5-7b",
              "DeepSeek-V2 (236B total / 21B active, MoE)": "deepseek-v2", "Meta Llama 3.2 1B": "llama-3.2-1b"}


@pytest.mark.parametrize("model", [m for m in FACTS if "rope_theta" in m], ids=lambda m: m["name"])
def test_record_rope_fields_match_the_facts_file(model):
    facts = mk.MODEL_FACTS[PRESET_FOR[model["name"]]]
    assert facts.rope_theta == model["rope_theta"]
    assert (None if facts.rope_scaling is None else dict(facts.rope_scaling)) == model["rope_scaling"]
    assert facts.rope_source and model["rope_source"]


def test_records_without_rope_facts_leave_them_unset():
    recorded = {PRESET_FOR[m["name"]] for m in FACTS if "rope_theta" in m}
    assert recorded == set(PRESET_FOR.values())
    for name, facts in mk.MODEL_FACTS.items():
        if name not in recorded:
            assert facts.rope_theta is None and facts.rope_scaling is None


def test_record_scaling_is_read_only_and_readable_by_rope_inv_freq():
    facts = mk.MODEL_FACTS["deepseek-v2"]
    with pytest.raises(TypeError):
        facts.rope_scaling["factor"] = 2.0
    _, factor = mk.rope_inv_freq(facts.config.qk_rope_head_dim, facts.rope_theta, facts.rope_scaling)
    assert factor == 1.0  # equal mscales: DeepSeek moves the temperature into the softmax scale


@pytest.mark.parametrize("kwargs, message", [
    (dict(rope_theta=-5.0, rope_source="x"), r"^rope_theta must be a positive number or None, got -5.0$"),
    (dict(rope_scaling={"type": "linear", "factor": 2.0}), r"^toy: rope_scaling needs rope_theta, the base it scales$"),
    (dict(rope_theta=1e4), r"^toy: rope_theta needs rope_source, where it was read$"),
    (dict(rope_theta=1e4, rope_source="x", rope_scaling={"type": "ntk"}), r"^unknown rope_type 'ntk'"),
])
def test_model_facts_rope_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mk.ModelFacts(name="toy", title="Toy", cite="llama3", source="s", context_length=8,
                      config=mk.AttentionConfig(8, 2), **kwargs)


def test_yarn_mscale_by_hand():
    assert mk.yarn_mscale(math.e) == pytest.approx(1.1, rel=1e-15)  # 0.1 ln e + 1
    assert mk.yarn_mscale(math.e**2, 0.707) == pytest.approx(0.1414 + 1, rel=1e-15)  # DeepSeek's 0.0707 ln s + 1
    assert mk.yarn_mscale(1.0) == 1.0 and mk.yarn_mscale(0.5) == 1.0  # not stretching: no temperature
    with pytest.raises(ValueError, match=r"^factor must be a positive finite number, got 0$"):
        mk.yarn_mscale(0)
