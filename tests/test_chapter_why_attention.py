"""The numbers the chapter "Why attention looks like this" states, recomputed here without its code.

Products are written out; the two experiments (the key-value lookup, the induction circuit) are
rebuilt from their description in the text with plain numpy.
"""
import math

import numpy as np

import mha_kit as mk


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_merged_qk_is_sixteen_times_larger_for_a_llama_head():
    cfg = mk.PRESETS["llama-3-8b"]
    assert (cfg.d_model, cfg.head_dim) == (4096, 128)
    assert 4096 * 4096 == 16 * (2 * 4096 * 128)


def test_additive_scores_cost_about_twice_the_dot_product():
    n, d_h = mk.MODEL_FACTS["llama-3-8b"].context_length, 128  # 8,192 tokens
    dot = 2 * n * n * d_h
    additive = 2 * (n + n) * d_h * d_h + 4 * n * n * d_h  # projections, then add + tanh + dot per pair
    assert dot == 17_179_869_184 and additive == 34_896_609_280
    assert f"{additive / dot:.2f}" == "2.03"
    assert 2 * n * n * d_h == 16 * 2**30  # the (n, s, d_a) tensor in bf16: 16 GiB


def test_table_1_for_gpt2():
    n, d = 1024, 768
    assert mk.MODEL_FACTS["gpt2"].context_length == n and mk.PRESETS["gpt2"].d_model == d
    assert n * n * d == 805_306_368 and n * d * d == 603_979_776  # self-attention, recurrent
    assert f"{(n * n * d) / (n * d * d):.2f}" == "1.33"  # n / d: more work than a recurrent layer
    assert 3**6 < n <= 3**7  # dilated convolutions of width 3: 7 layers
    assert (n * d) ** 2 == 618_475_290_624 and 4 * d * d == 2_359_296


def test_tied_keys_and_values_lose_the_payload():
    rng = np.random.default_rng(0)
    outs = {"separate": [], "tied": []}
    wanted = []
    for _ in range(300):
        names, payload = np.eye(6), rng.standard_normal((6, 2))
        target = rng.integers(6)
        weights = _softmax(20.0 * names[target] @ names.T / math.sqrt(6))  # keys read the name
        outs["separate"].append(weights @ payload)
        outs["tied"].append(weights @ names)  # values read the name too
        wanted.append(payload[target])
    wanted = np.array(wanted)
    errors = {}
    for kind, out in outs.items():
        out = np.array(out)
        w_o, *_ = np.linalg.lstsq(out, wanted, rcond=None)
        errors[kind] = np.mean((out @ w_o - wanted) ** 2) / np.mean(wanted**2)
    assert errors["separate"] < 0.01 and errors["tied"] > 0.9


def test_tied_projections_favour_the_token_itself():
    rng = np.random.default_rng(1)
    self_top = 0
    for _ in range(300):
        x = rng.standard_normal((8, 64))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        xw = x @ (rng.standard_normal((64, 16)) / 8)
        s = xw @ xw.T
        assert np.allclose(s, s.T)
        self_top += int((s.argmax(axis=1) == np.arange(8)).sum())
    assert self_top / 2400 > 0.95


def test_a_hand_built_induction_circuit_completes_the_repeat():
    vocab, half = 16, 10
    n = 2 * half + 1
    causal = np.tril(np.ones((n, n), dtype=bool))
    rng = np.random.default_rng(2)
    first = rng.choice(vocab, size=half, replace=False)
    tokens = np.concatenate([[vocab], first, first])  # a start token, then the 10 tokens twice
    onehot = np.eye(vocab + 1)[tokens]
    # layer 1: position i attends to position i - 1 and copies its token
    scores = np.where(causal, 30 * np.eye(n) @ np.eye(n, k=1).T / math.sqrt(n), -np.inf)
    previous = _softmax(scores) @ onehot
    # layer 2: the current token attends to the position whose previous token it is
    scores = np.where(causal, 30 * onehot @ previous.T / math.sqrt(vocab + 1), -np.inf)
    predicted = (_softmax(scores) @ onehot).argmax(axis=1)
    assert (predicted[half + 1:n - 1] == tokens[half + 2:]).all()


def test_voita_pruning_kept_fraction():
    encoder_heads, pruned = 6 * 8, 38  # Transformer-base encoder: 6 layers x 8 heads; Voita et al. pruned 38
    assert encoder_heads == 48
    assert mk.format_percent((encoder_heads - pruned) / encoder_heads) == "20.8%"


def test_a_tied_projection_with_room_for_the_payload_returns_it():
    """The third lookup: W_K = W_V read the name and the payload; the query looks only at the name."""
    rng = np.random.default_rng(0)
    outs, wanted = [], []
    for _ in range(300):
        x = np.hstack([np.eye(6), rng.standard_normal((6, 2))])  # (6, 8): name, payload
        target = rng.integers(6)
        query = np.zeros(8)
        query[target] = 20.0
        weights = _softmax(query @ x.T / math.sqrt(8))  # keys are the whole token
        outs.append(weights @ x)  # and so are the values
        wanted.append(x[target, 6:])
    outs, wanted = np.array(outs), np.array(wanted)
    w_o, *_ = np.linalg.lstsq(outs, wanted, rcond=None)
    assert np.mean((outs @ w_o - wanted) ** 2) / np.mean(wanted**2) < 0.01
