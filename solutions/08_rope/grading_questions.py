"""The judge's questions of 08_rope: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

import numpy as np

import mha_kit as mk

from mha_course.judge.expect import expect_close, expect_float
from mha_course.judge.questions import question
from mha_course.judge import diagnoses


def rope_inputs(n, r, seed):
    """An ``(n, r)`` array of vectors from ``seed``."""
    return np.random.default_rng(seed).standard_normal((n, r))


def _rope_mistakes(x, positions):
    """Outputs of the classic RoPE mistakes, to name the one made."""
    r = x.shape[-1]
    pos = np.asarray(positions)[:, None]
    angle = pos * 10000.0 ** (-np.arange(r // 2) * 2.0 / r)
    sin, cos = np.sin(angle), np.cos(angle)  # not the solution's own line: this file is packed into the browser edition
    pairs = np.empty_like(x)  # neighbouring dimensions 2i, 2i + 1 rotated together
    pairs[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    pairs[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return {"this rotates neighbouring dimensions (2i, 2i+1): here dimension i pairs with i + r/2": pairs,
            "the rotation goes the wrong way: x1 cos - x2 sin, then x1 sin + x2 cos": mk.rope(x, -np.asarray(positions)),
            "frequencies are base ** (-2i / r), not base ** (-i / r)":
                mk.rope(x, np.asarray(positions)) if r == 2 else _slow_rope(x, positions)}


def _slow_rope(x, positions):
    r = x.shape[-1]
    angle = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(r // 2) * 1.0 / r)
    x1, x2 = x[:, : r // 2], x[:, r // 2:]
    return np.concatenate([x1 * np.cos(angle) - x2 * np.sin(angle), x1 * np.sin(angle) + x2 * np.cos(angle)], axis=-1)


@question("rope", lambda n, r, seed, positions: f"rope of a ({n}, {r}) array at positions {positions}")
def _rope(got, n, r, seed, positions):
    x = rope_inputs(n, r, seed)
    what = f"rope of a ({n}, {r}) array at positions {positions}"
    expected = mk.rope(x, positions)
    from_zero = [mk.rope(x, np.arange(n))] if list(positions) != list(range(n)) else []
    diagnoses.check(got, expected, what, {"from_zero": from_zero}, "positions_ignored")
    expect_close(got, expected, what, wrong=_rope_mistakes(x, positions))


def pair_inputs(r, seed):
    """One query vector and one key vector of size ``r`` from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(r), rng.standard_normal(r)


@question("rope_score", lambda r, seed, m, p: f"score of a query at {m} and a key at {p} (r={r})")
def _rope_score(got, r, seed, m, p):
    q, k = pair_inputs(r, seed)
    expected = float(mk.rope_scores(q, k, [m], [p])[0, 0])
    what = f"score of q at position {m} and k at {p} (r={r})"
    if type(got) is float and not np.isclose(got, expected) and np.isclose(got, float(mk.rope_scores(q, k, [p], [m])[0, 0])):
        raise AssertionError(f"score at positions ({m}, {p}) is the one for ({p}, {m}): rotate q by m and k by p")
    q_rot, k_rot = mk.rope(q[None], [m])[0], mk.rope(k[None], [p])[0]
    diagnoses.check(got, expected, what, {"unrotated": [float(q_rot @ k), float(q @ k_rot), float(q @ k)]}, "not_rotated")
    expect_float(got, expected, what, rtol=1e-7)


@question("scores_at_distance", lambda r, seed, distance, starts: f"scores at distance {distance} from starts {starts}")
def _scores_at_distance(got, r, seed, distance, starts):
    q, k = pair_inputs(r, seed)
    keys_at = np.asarray(starts)  # not the solution's own line: this file is packed into the browser edition
    expected = mk.rope_scores(q, k, keys_at + distance, keys_at).diagonal()  # query at t + distance, key at t
    if np.ptp(expected) > 1e-8 * (1 + np.abs(expected).max()):  # the property itself: one value for every start
        raise AssertionError("course bug: RoPE scores at one distance differ")  # pragma: no cover
    what = f"scores at distance {distance} for starts {keys_at.tolist()}"
    diagnoses.known(got, expected, what, [
        (mk.rope_scores(q, k, keys_at, keys_at + distance).diagonal(),
         "the query goes at start + distance and the key at start (not the reverse)"),
        (mk.rope_scores(q, k, keys_at, keys_at).diagonal(), "query and key at one position: the query goes at start + distance")])
    expect_close(got, expected, what)


def rotary_inputs(h, n, d_h, seed):
    """``(q, k, v)`` of shape ``(h, n, d_h)`` each from ``seed``."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((h, n, d_h)) for _ in range(3))


@question("rope_attention", lambda h, n, d_h, seed, start: f"causal RoPE attention (h={h}, n={n}, first position {start})")
def _rope_attention(got, h, n, d_h, seed, start):
    q, k, v = rotary_inputs(h, n, d_h, seed)
    positions = np.arange(start, start + n)
    mask = mk.causal_mask(n)
    what = f"RoPE attention (h={h}, n={n}, d_h={d_h}, from position {start})"
    if type(got) is tuple:
        raise AssertionError(f"{what}: got a tuple: mk.scaled_dot_product_attention returns (out, weights)")
    q_rot, k_rot = mk.rope(q, positions), mk.rope(k, positions)

    def attend(queries, keys):  # causal attention with the 1/sqrt(d_h) the function applies
        return mk.scaled_dot_product_attention(queries, keys, v, mask)[0]

    expected = mk.rotary_attention(q, k, v, positions, mask=mask)[0]
    context = {"unrotated": [attend(q_rot, k), attend(q, k_rot)], "unscaled": [attend(q_rot * np.sqrt(d_h), k_rot)],
               "rescaled": [attend(q_rot / np.sqrt(d_h), k_rot), attend(q_rot * d_h, k_rot)]}
    diagnoses.check(got, expected, what, context, "not_rotated", "scale_missing", "scale_wrong")
    wrong = {"the values were rotated too: RoPE rotates queries and keys only":
             mk.scaled_dot_product_attention(q_rot, k_rot, mk.rope(v, positions), mask)[0],
             "no causal mask: token i may see tokens 0..i only": mk.rotary_attention(q, k, v, positions)[0]}
    expect_close(got, expected, what, wrong=wrong)
