"""mha_kit.linear_attention: the parallel and recurrent forms agree, and both follow the definition."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk

FEW = settings(max_examples=30, deadline=None)
TOL = 1e-10


def _qkv(seed, batch, n, s, d_h, d_v):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=batch + (n, d_h)), rng.normal(size=batch + (s, d_h)), rng.normal(size=batch + (s, d_v)))


def _by_definition(q, k, v, causal):
    """Eq. 2 of the paper with sim(q, k) = phi(q) . phi(k), one query and one key at a time."""
    phi = mk.elu_feature_map
    n, s = q.shape[0], k.shape[0]
    out = np.zeros((n, v.shape[1]))
    for i in range(n):
        keys = range(s - n + i + 1) if causal else range(s)
        sims = [phi(q[i]) @ phi(k[j]) for j in keys]
        out[i] = sum(w * v[j] for w, j in zip(sims, keys)) / sum(sims)
    return out


shapes = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1), "batch": st.lists(st.integers(1, 3), max_size=2).map(tuple),
    "n": st.integers(1, 6), "extra": st.integers(0, 5), "d_h": st.integers(1, 5), "d_v": st.integers(1, 4),
})


@FEW
@given(shape=shapes, causal=st.booleans())
def test_parallel_and_recurrent_forms_agree(shape, causal):
    q, k, v = _qkv(shape["seed"], shape["batch"], shape["n"], shape["n"] + shape["extra"], shape["d_h"], shape["d_v"])
    parallel = mk.linear_attention(q, k, v, causal=causal, form="parallel")
    recurrent = mk.linear_attention(q, k, v, causal=causal, form="recurrent")
    assert parallel.shape == recurrent.shape == shape["batch"] + (shape["n"], shape["d_v"])
    np.testing.assert_allclose(parallel, recurrent, rtol=0, atol=TOL)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("form", ["parallel", "recurrent"])
def test_both_forms_follow_the_definition(form, causal):
    q, k, v = _qkv(3, (), 4, 7, 3, 2)  # queries are the last 4 of 7 positions
    np.testing.assert_allclose(mk.linear_attention(q, k, v, causal=causal, form=form), _by_definition(q, k, v, causal),
                               rtol=0, atol=TOL)


def test_the_state_has_the_same_size_for_any_context():
    rng = np.random.default_rng(0)
    for s in (4, 400):
        state, z = mk.linear_attention_state(rng.normal(size=(2, s, 8)), rng.normal(size=(2, s, 5)))
        assert state.shape == (2, 8, 5) and z.shape == (2, 8)


def test_the_last_row_reads_the_state_of_every_key():
    q, k, v = _qkv(5, (), 6, 6, 4, 3)
    state, z = mk.linear_attention_state(k, v)
    phi_q = mk.elu_feature_map(q[-1])
    np.testing.assert_allclose(mk.linear_attention(q, k, v)[-1], phi_q @ state / (phi_q @ z), rtol=0, atol=TOL)


def test_feature_map_is_positive_and_continuous():
    x = np.array([-50.0, -1.0, 0.0, 1e-12, 2.0])
    phi = mk.elu_feature_map(x)
    assert (phi > 0).all()
    np.testing.assert_allclose(phi, [np.exp(-50.0), np.exp(-1.0), 1.0, 1.0 + 1e-12, 3.0])


def test_a_custom_feature_map():
    q, k, v = _qkv(6, (), 3, 3, 2, 2)
    squared = lambda x: x**2 + 1e-3  # noqa: E731 - positive, so every normaliser is positive
    out = mk.linear_attention(q, k, v, form="recurrent", feature_map=squared)
    np.testing.assert_allclose(out, mk.linear_attention(q, k, v, form="parallel", feature_map=squared), atol=TOL)


def test_a_feature_map_that_is_not_positive_is_refused():
    q, k, v = _qkv(7, (), 3, 3, 2, 2)
    with pytest.raises(ValueError, match=r"^linear attention needs a positive normaliser"):
        mk.linear_attention(q, k, v, feature_map=lambda x: x)


def test_bad_form_and_shapes():
    q, k, v = _qkv(8, (), 3, 3, 2, 2)
    with pytest.raises(ValueError, match=r"^form must be one of \('parallel', 'recurrent'\), got 'rnn'$"):
        mk.linear_attention(q, k, v, form="rnn")
    with pytest.raises(ValueError, match=r"^causal linear attention needs n <= s: 3 queries, 2 keys$"):
        mk.linear_attention(q, k[:2], v[:2])
    with pytest.raises(ValueError, match=r"^q and k must share the head size"):
        mk.linear_attention(q, k[:, :1], v)


@FEW
@given(shape=shapes, chunk=st.integers(1, 8))
def test_the_chunkwise_form_equals_the_causal_parallel_form(shape, chunk):
    """Yang et al. (2024), sec. 2.2: intra-chunk masked products plus the state of earlier chunks."""
    n = shape["n"] + shape["extra"]
    q, k, v = _qkv(shape["seed"], shape["batch"], n, n, shape["d_h"], shape["d_v"])
    np.testing.assert_allclose(mk.linear_attention_chunked(q, k, v, chunk), _parallel_causal(q, k, v), rtol=0, atol=TOL)


def _parallel_causal(q, k, v):
    return mk.linear_attention(q, k, v, causal=True, form="parallel")


def test_chunkwise_follows_the_definition_and_refuses_bad_input():
    q, k, v = _qkv(9, (), 7, 7, 3, 2)
    np.testing.assert_allclose(mk.linear_attention_chunked(q, k, v, 3), _by_definition(q, k, v, True), rtol=0, atol=TOL)
    with pytest.raises(ValueError, match=r"^chunk must be a positive integer"):
        mk.linear_attention_chunked(q, k, v, 0)
    with pytest.raises(ValueError, match=r"^chunked linear attention is self-attention: 7 queries need 7 keys, got 6$"):
        mk.linear_attention_chunked(q, k[:6], v[:6], 2)


def test_flops_of_the_two_orders_written_out():
    """Katharopoulos et al. (2020), eq. 5 against eq. 6: n^2 (d_phi + d_v) against n d_phi d_v."""
    n, d_phi, d_v = 4096, 128, 64
    scores_then_values = 2 * (n * n * d_phi) + 2 * (n * n * d_v)  # (n, d_phi) @ (d_phi, n), then (n, n) @ (n, d_v)
    state_then_reads = 2 * (d_phi * n * d_v) + 2 * (n * d_phi * d_v)  # (d_phi, n) @ (n, d_v), then (n, d_phi) @ (d_phi, d_v)
    assert mk.linear_attention_flops(n, d_phi, d_v, "quadratic") == scores_then_values == 6_442_450_944
    assert mk.linear_attention_flops(n, d_phi, d_v, "linear") == state_then_reads == 134_217_728
    chunks = n // 64  # each: (64, 64) scores and values, a read of the state and an update
    per_chunk = 2 * 64 * 64 * d_phi + 2 * 64 * 64 * d_v + 2 * 64 * d_phi * d_v + 2 * d_phi * 64 * d_v
    assert mk.linear_attention_flops(n, d_phi, d_v, "chunkwise", chunk=64) == chunks * per_chunk
    # the orders cost the same where n = d_phi = d_v: reassociation pays only for n above the head size
    assert mk.linear_attention_flops(128, 128, 128, "quadratic") == mk.linear_attention_flops(128, 128, 128, "linear")


def test_flops_refuse_bad_input():
    with pytest.raises(ValueError, match=r"^order must be one of \('quadratic', 'linear', 'chunkwise'\), got 'cubic'$"):
        mk.linear_attention_flops(8, 2, 2, "cubic")
    with pytest.raises(ValueError, match=r"^chunk \(3\) must divide n \(8\)$"):
        mk.linear_attention_flops(8, 2, 2, "chunkwise", chunk=3)
    with pytest.raises(ValueError, match=r"^n must be a positive integer"):
        mk.linear_attention_flops(0, 2, 2, "linear")
