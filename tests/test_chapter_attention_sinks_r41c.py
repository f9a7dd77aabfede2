"""Section attention_sinks-deeper-layers: a sink cache is exact in layer 1 only. Recomputed here with a
two-layer model written from scratch (RoPE on rotate-half pairs, base 10000), independent of mha_kit."""
import json
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "attention_sinks.ipynb"
D, N, SINK, WINDOW = 16, 24, 4, 8


def _rope(x, pos):
    half = x.shape[-1] // 2
    ang = np.asarray(pos, float)[:, None] * 10000.0 ** (-np.arange(half) / half)  # (n, d/2)
    cos, sin = np.cos(ang), np.sin(ang)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def _attend(q, k, v, qpos, kpos, allowed):
    s = _rope(q, qpos) @ _rope(k, kpos).T / np.sqrt(q.shape[-1])
    s = np.where(allowed, s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def _model():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, D))
    w = rng.standard_normal((2, 4, D, D)) / np.sqrt(D)
    return x, w


def _full(x, w, pos, allowed):
    outs = []
    for wq, wk, wv, wo in w:
        x = x + _attend(x @ wq, x @ wk, x @ wv, pos, pos, allowed) @ wo
        outs.append(x[-1])
    return outs


def _decode(x_all, w, n_sink, window, cache_positions):
    held = [[] for _ in w]  # per layer: (text position, pre-RoPE key, value)
    for t in range(N):
        x, last = x_all[t:t + 1], []
        for layer, (wq, wk, wv, wo) in enumerate(w):
            held[layer].append((t, (x @ wk)[0], (x @ wv)[0]))
            keep = [e for e in held[layer] if e[0] < n_sink or e[0] > t - window]
            held[layer] = keep
            kpos = np.arange(len(keep)) if cache_positions else np.array([e[0] for e in keep])
            k, v = np.array([e[1] for e in keep]), np.array([e[2] for e in keep])
            x = x + _attend(x @ wq, k, v, kpos[-1:], kpos, np.ones((1, len(keep)), bool)) @ wo
            last.append(x[0])
    return last, [e[0] for e in held[0]], held


def _verdict(err):
    return "equal" if err < 1e-12 else f"differs by {err:.2g}"


def _printed():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if "def stack_decode(" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").strip().splitlines()


def test_deeper_layers_table_matches_an_independent_model():
    x, w = _model()
    sink, kept, held = _decode(x, w, SINK, WINDOW, cache_positions=True)
    assert kept == [0, 1, 2, 3] + list(range(N - WINDOW, N))
    causal = np.tril(np.ones((N, N), bool))
    full = _full(x, w, np.arange(N), causal)
    fresh = _full(x[kept], w, np.arange(len(kept)), np.tril(np.ones((len(kept),) * 2, bool)))
    roll, _, _ = _decode(x, w, 0, WINDOW, cache_positions=False)
    band = causal & (np.arange(N)[None, :] > np.arange(N)[:, None] - WINDOW)
    windowed = _full(x, w, np.arange(N), band)
    lines = _printed()
    assert lines[0] == f"kept tokens: {kept}"
    for layer in range(2):
        errs = [np.abs(a[layer] - b[layer]).max() for a, b in ((sink, full), (sink, fresh), (roll, windowed))]
        cells = lines[2 + layer].split()
        assert cells[0] == str(layer + 1)
        expected = " ".join(_verdict(e) for e in errs)
        assert " ".join(cells[1:]) == expected
    # the claims the prose makes: layer 1 is the fresh pass, layer 2 is neither, the windowed model is exact
    assert np.abs(sink[0] - fresh[0]).max() < 1e-12 and np.abs(sink[1] - fresh[1]).max() > 1e-3
    assert np.abs(sink[1] - full[1]).max() > 1e-3
    assert all(np.abs(roll[i] - windowed[i]).max() < 1e-12 for i in range(2))


def test_the_as_if_sentence_is_limited_to_one_layer():
    text = "".join("".join(c["source"]) for c in json.loads(NB.read_text())["cells"])
    assert "*as if the\nevicted ones had never existed*" not in text
    assert "*in one layer*" in text and "(attention_sinks-deeper-layers)=" in text


def test_layer2_cache_sinks_exact_window_stale():
    x, w = _model()
    _, kept, held = _decode(x, w, SINK, WINDOW, cache_positions=True)
    n = len(kept)
    pos = np.arange(n)
    x1 = x[kept] + _attend(x[kept] @ w[0][0], x[kept] @ w[0][1], x[kept] @ w[0][2], pos, pos,
                           np.tril(np.ones((n, n), bool))) @ w[0][3]
    fresh_k2 = x1 @ w[1][1]
    cached_k2 = np.array([e[1] for e in held[1]])
    sinks, window = np.abs(cached_k2[:SINK] - fresh_k2[:SINK]).max(), np.abs(cached_k2[SINK:] - fresh_k2[SINK:]).max()
    assert sinks < 1e-12 and window > 1e-3
    assert _printed()[4] == f"layer 2 cached keys vs fresh pass: sinks {_verdict(sinks)}, window {_verdict(window)}"
    nb = json.loads(NB.read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"])
    assert "re-encodes only\nthe last $L$ tokens (no sinks" in text
    assert "nothing it evicts could have reached" not in text
