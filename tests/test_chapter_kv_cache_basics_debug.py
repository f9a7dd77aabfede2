"""Chapter "The KV cache from zero", section kv_cache_basics-debug-long: where each injected bug shows.

Independent of the chapter's code: RoPE is written out as a rotation of dimension pairs, attention
as an explicit softmax over the keys a token may see, the paged pool as a dict from slot to token.
"""
import numpy as np

N, D_H, P, B, W = 40, 8, 8, 16, 32
TABLE = [2, 0, 3]


def rotate(x, pos):
    half = D_H // 2
    theta = pos * 10000.0 ** (-np.arange(half) / half)  # angle of pair i: pos * base^(-2i/d)
    a, b = x[:half], x[half:]
    return np.concatenate([a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)])


def attend(q, keys, values):
    s = np.array([q @ k for k in keys]) / np.sqrt(D_H)
    w = np.exp(s - s.max())
    return (w / w.sum()) @ np.array(values)


def data():
    q, k, v = np.random.default_rng(6).standard_normal((3, 1, N, D_H))  # the chapter's draw
    return q[0], k[0], v[0]


def reference():
    q, k, v = data()
    return np.array([attend(rotate(q[t], t), [rotate(k[j], j) for j in range(max(0, t - W + 1), t + 1)],
                            [v[j] for j in range(max(0, t - W + 1), t + 1)]) for t in range(N)])


def decode(position, slot, window):
    q, k, v = data()
    pool, rows = {}, []
    for t in range(N):
        pool[slot(t)] = (rotate(k[t], position(t)), v[t])
        seen = [pool[slot(i)] for i in range(max(0, t + 1 - window), t + 1)]
        rows.append(attend(rotate(q[t], position(t)), [a for a, _ in seen], [b for _, b in seen]))
    return np.array(rows)


def first_bad(ref, out):
    bad = [t for t in range(N) if not np.allclose(ref[t], out[t], rtol=1e-6, atol=1e-9)]
    return bad[0] if bad else None


def right_slot(t):
    return TABLE[t // B] * B + t % B


def test_each_bug_shows_at_its_threshold():
    ref = reference()
    assert first_bad(ref, decode(lambda t: t, right_slot, W)) is None
    assert first_bad(ref, decode(lambda t: t if t < P else t + 1, right_slot, W)) == P  # first decode step
    assert first_bad(ref, decode(lambda t: t, lambda t: TABLE[0] * B + t % B, W)) == B  # token 17
    assert first_bad(ref, decode(lambda t: t, right_slot, N)) == W  # first query whose window drops a key


def test_a_uniform_shift_is_invisible_to_rope():
    assert first_bad(reference(), decode(lambda t: t + 1, right_slot, W)) is None
