"""positions-sinusoidal-shift-head: a head whose W_Q W_K^T is the shift matrix M_k of Vaswani et al.'s sec. 3.5
encoding scores the key k positions from the query highest, wherever the query sits. Recomputed position by
position with math.cos and the summed-cosine form, against the chapter's stored outputs."""
import json
import math
import pathlib
import re

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "positions.ipynb"
D, N, K = 64, 512, -1
OMEGA = [10000.0 ** (-2 * i / D) for i in range(D // 2)]  # omega_i = 10000^(-2i/d), sec. 3.5


def _cells():
    return json.loads(NB.read_text())["cells"]


def _stdout():
    cell = next(c for c in _cells() if "(positions-sinusoidal-shift-head)=" in "".join(c["source"]))
    code = _cells()[_cells().index(cell) + 1]
    return "".join("".join(o["text"]) for o in code["outputs"] if o.get("name") == "stdout")


def _score(t, s):
    # PE_t M_k PE_s^T = PE_{t+k} . PE_s = sum_i cos(omega_i (t + k - s)), written out one pair at a time
    return sum(math.cos(w * (t + K - s)) for w in OMEGA)


def _pe(p):
    row = []
    for w in OMEGA:
        row += [math.sin(p * w), math.cos(p * w)]
    return np.array(row)


def test_matrix_form_equals_summed_cosines():
    # build M_k pair by pair as a 2x2 rotation and compare the bilinear form with the closed form
    m = np.zeros((D, D))
    for i, w in enumerate(OMEGA):
        a = K * w
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    for t, s in [(4, 3), (100, 37), (400, 401), (0, 511)]:
        assert math.isclose(_pe(t) @ m @ _pe(s), _score(t, s), abs_tol=1e-9)
    assert np.allclose(_pe(9) @ m, _pe(9 + K))


def test_best_key_is_t_plus_k_for_every_query():
    _stdout_text = _stdout()
    # the score depends on t + k - s only: one math.cos sum per offset (-N..N), laid out as the N x N table by indexing
    by_offset = np.array([_score(d - K, 0) for d in range(-N, N)])
    t, s = np.arange(1, N)[:, None], np.arange(N)[None, :]
    table = by_offset[t + K - s + N]
    assert (table.argmax(axis=1) == np.arange(1, N) + K).all()  # every query; argmax keeps the first of ties, as max
    for t in range(1, N, 51):  # and the table is the pairwise score, entry for entry, on every 51st query
        assert table[t - 1].tolist() == [_score(t, s) for s in range(N)]
    assert "over all queries t = 1..511: [-1]" in _stdout_text


def test_printed_scores_and_runner_up():
    out = _stdout()
    peak = _score(100, 99)
    runner = max(_score(100, s) for s in range(N) if s != 99)
    assert math.isclose(peak, D / 2)
    lines = re.findall(r"query t = +(\d+): best key s = +(\d+) \(s - t = -1\), score ([\d.]+), runner-up ([\d.]+)", out)
    assert [int(t) for t, *_ in lines] == [4, 8, 100, 400]
    for t, s, sc, ru in lines:
        assert int(s) == int(t) + K
        assert sc == f"{D / 2:.2f}"
        runner_t = max(_score(int(t), x) for x in range(N) if x != int(t) + K)
        assert ru == f"{runner_t:.2f}"
    assert f"{runner:.2f}" == "30.92"


def test_softmax_weight_grows_with_gain():
    out = _stdout()
    for gain in (1, 4, 16):
        z = [gain * _score(100, s) / math.sqrt(D) for s in range(N)]
        top = max(z)
        weight = math.exp(z[99] - top) / sum(math.exp(v - top) for v in z)
        assert f"gain {gain:2d}: softmax weight of query 100 on key 99 = {weight:.3f}" in out
    assert "gain  1: softmax weight of query 100 on key 99 = 0.0" in out  # flat at gain 1


def test_section_sits_after_sinusoidal_dot_and_links():
    cells = ["".join(c["source"]) for c in _cells()]
    at = {lab: next(i for i, s in enumerate(cells) if f"({lab})=" in s)
          for lab in ("positions-sinusoidal-dot", "positions-sinusoidal-shift-head", "positions-rope")}
    assert at["positions-sinusoidal-dot"] < at["positions-sinusoidal-shift-head"] < at["positions-rope"]
    section = "\n".join(cells[at["positions-sinusoidal-shift-head"]:at["positions-rope"]])
    for ref in ("{ref}`positions-rope`", "{ref}`positions-sinusoidal-dot`", "vaswani2017attention{§3.5}"):
        assert ref in section
    assert ":class: dropdown" in section and "In the interview" in section


def test_causal_mask_weights():
    # a decoder's query 100 sees keys 0..100 only: the weight on key 99 over that prefix, pair by pair
    out = _stdout()
    got = re.findall(r"causal \(keys 0\.\.100 only\): ([\d.]+)", out)
    want = []
    for gain in (1, 4, 16):
        z = [gain * _score(100, s) / math.sqrt(D) for s in range(101)]
        top = max(z)
        want.append(f"{math.exp(z[99] - top) / sum(math.exp(v - top) for v in z):.3f}")
    assert got == want
    assert float(want[0]) > 2.5 * 0.018  # the mask raises the gain-1 weight about threefold


def test_fastest_pair_near_repeats():
    near = [d for d in range(1, N) if math.cos(d) > 0.99]  # omega_0 = 10000^0 = 1
    assert near[:6] == [25, 44, 69, 88, 113, 132]
    assert "cos(omega_0 * delta) > 0.99: [ 25  44  69  88 113 132] ..." in _stdout()


def test_rank_limited_head_at_d_model_512():
    # a d_k = 64 head copies M_k on 32 of the 256 pairs of a 512-dim code with gains a_i > 0; rebuilt from the
    # same rng draws, scored with the summed-cosine form, the peak is at t + k for every query
    rng = np.random.default_rng(1)
    pairs = sorted(rng.choice(256, 32, replace=False).tolist())
    gains = rng.uniform(0.5, 2.0, 32).tolist()
    assert all(a > 0 for a in gains)
    om = [10000.0 ** (-2 * i / 512) for i in pairs]

    def score(t, s):
        return sum(a * math.cos(w * (t + K - s)) for a, w in zip(gains, om))

    for t in range(1, N, 7):
        row = [score(t, s) for s in range(N)]
        assert max(range(N), key=row.__getitem__) == t + K
    row = sorted(score(100, s) for s in range(N))
    out = _stdout()
    assert "rank of W_Q W_K^T = 64; row 100 equals sum_(i in S) a_i cos: True" in out
    assert f"[-1] (query 100: peak {row[-1]:.2f} = sum a_i, runner-up {row[-2]:.2f})" in out
    assert math.isclose(row[-1], sum(gains))
    # rank: the 512 x 512 product has only 64 nonzero singular values
    wq, wk = np.zeros((512, 64)), np.zeros((512, 64))
    for j, i in enumerate(pairs):
        a = K * 10000.0 ** (-2 * i / 512)
        wq[2 * i:2 * i + 2, 2 * j:2 * j + 2] = gains[j] * np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        wk[2 * i:2 * i + 2, 2 * j:2 * j + 2] = np.eye(2)
    assert np.linalg.matrix_rank(wq @ wk.T) == 64


def test_rank_and_causal_wording_in_section():
    cells = ["".join(c["source"]) for c in _cells()]
    at = next(i for i, s in enumerate(cells) if "(positions-sinusoidal-shift-head)=" in s)
    section = cells[at] + cells[at + 2]
    for phrase in ("rank at\nmost $d_k$", "vaswani2017attention{§3.2.2}", "$a_i \\ge 0$", "shift_head_causal_w1",
                   "one concrete reading", "only through $s - t$", "shift_head_runner_up"):
        assert phrase in section, phrase
