"""mk.output_gate, mk.gated_sdpa and mk.sink_logit_for_weight (gated attention, Qiu et al. 2025)."""
import numpy as np
import pytest

import mha_kit as mk


def test_gate_is_sigmoid_times_output():
    out = np.array([[2.0, -4.0]])
    assert np.allclose(mk.output_gate(out, np.zeros((1, 2))), out / 2)  # sigmoid(0) = 1/2
    assert np.allclose(mk.output_gate(out, [[np.log(3.0)]]), 0.75 * out)  # headwise: sigmoid(ln 3) = 3/4


def test_zero_value_sink_equals_headwise_gate():
    rng = np.random.default_rng(1)
    s, d = 10, 4
    scores = rng.normal(size=(3, s))  # 3 queries, real keys
    v = rng.normal(size=(s, d))
    sink = np.array([[2.0], [0.5], [-1.0]])  # each query's score on a zero-value sink key
    with_sink = mk.softmax(np.concatenate([sink, scores], axis=1))  # (3, s + 1)
    y_sink = with_sink[:, 1:] @ v  # the sink's value is zero
    p0 = with_sink[:, :1]
    y_gate = mk.output_gate(mk.softmax(scores) @ v, np.log((1 - p0) / p0))
    np.testing.assert_allclose(y_gate, y_sink, rtol=1e-12, atol=1e-14)


def test_gated_sdpa_matches_sdpa_times_gate():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    g = rng.normal(size=(2, 5, 8))
    out, w = mk.gated_sdpa(q, k, v, g, mask=mk.causal_mask(5))
    ref, w_ref = mk.scaled_dot_product_attention(q, k, v, mk.causal_mask(5))
    np.testing.assert_allclose(out, ref / (1 + np.exp(-g)))
    np.testing.assert_array_equal(w, w_ref)


def test_sink_logit_grows_with_log_context():
    # e^a / (e^a + s) = p  <=>  a = ln s + ln(p / (1 - p))
    a = mk.sink_logit_for_weight(0.99, 1024)
    assert np.exp(a) / (np.exp(a) + 1024) == pytest.approx(0.99)
    assert mk.sink_logit_for_weight(0.99, 2048) - a == pytest.approx(np.log(2))


def test_errors():
    with pytest.raises(ValueError, match="gate_logits must have shape"):
        mk.output_gate(np.zeros((2, 4)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="weight must lie strictly between 0 and 1"):
        mk.sink_logit_for_weight(1.0, 10)
    with pytest.raises(ValueError, match="n_keys must be a positive integer"):
        mk.sink_logit_for_weight(0.5, 0)
