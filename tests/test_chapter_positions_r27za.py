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
    for t in range(1, N):
        row = [_score(t, s) for s in range(N)]
        assert max(range(N), key=row.__getitem__) == t + K
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
