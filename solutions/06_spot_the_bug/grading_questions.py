"""The judge's questions of 06_spot_the_bug: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

import mha_kit as mk

from mha_course.judge.expect import expect_close, expect_int
from mha_course.kernel.cases import config
from mha_course.judge import diagnoses
from mha_course.judge.questions import (
    spec_name as _name,
    rng_arrays as _rng_arrays,
    ramp as _ramp,
    BITS_HINT as _BITS,
    question,
)


# The buggy functions of the notebook, to recognise a bug left in.

def buggy_causal_attention(q, k, v):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    return np.where(mk.causal_mask(len(q)), mk.softmax(scores), 0.0) @ v


def buggy_attention(q, k, v):
    return mk.softmax(q @ k.T / q.shape[-1]) @ v


def buggy_grouped_attention(q, k, v):
    h, h_kv = q.shape[0], k.shape[0]
    return np.stack([mk.softmax(q[i] @ k[i % h_kv].T / np.sqrt(q.shape[-1])) @ v[i % h_kv] for i in range(h)])


@question("fixed_causal_attention", lambda n, d_h, seed: f"causal attention (n={n}, d_h={d_h})")
def _fixed_causal(got, n, d_h, seed):
    q, k, v = _rng_arrays(seed, (n, d_h), (n, d_h), (n, d_h))
    expect_close(got, mk.scaled_dot_product_attention(q, k, v, mk.causal_mask(n))[0], f"causal attention (n={n}, d_h={d_h})",
                 wrong={"the mask is still applied after softmax": buggy_causal_attention(q, k, v)})


@question("fixed_attention", lambda n, s, d_h, seed: f"attention (n={n}, s={s}, d_h={d_h})")
def _fixed_attention(got, n, s, d_h, seed):
    q, k, v = _rng_arrays(seed, (n, d_h), (s, d_h), (s, d_h))
    what, expected = f"attention (n={n}, s={s}, d_h={d_h})", mk.scaled_dot_product_attention(q, k, v)[0]
    diagnoses.check(got, expected, what, {"unscaled": [mk.softmax(q @ k.T) @ v], "rescaled": [buggy_attention(q, k, v)]},
                    "scale_missing", "scale_wrong")
    expect_close(got, expected, what)


@question("fixed_grouped_attention", lambda h, h_kv, n, seed: f"grouped attention (h={h}, h_kv={h_kv})")
def _fixed_grouped(got, h, h_kv, n, seed):
    q, k, v = _rng_arrays(seed, (h, n, 4), (h_kv, n, 4), (h_kv, n, 4))
    what, expected = f"grouped attention (h={h}, h_kv={h_kv})", mk.grouped_attention(q, k, v)[0]
    # the bug left in reads key-value head i % h_kv; a fix with i // h_kv stays below h_kv when h <= h_kv**2
    by_h_kv = ([np.stack([mk.softmax(q[i] @ k[i // h_kv].T / np.sqrt(q.shape[-1])) @ v[i // h_kv] for i in range(h)])]
               if h <= h_kv * h_kv else [])
    diagnoses.check(got, expected, what, {"other_kv_head": [buggy_grouped_attention(q, k, v), *by_h_kv]}, "wrong_kv_head")
    expect_close(got, expected, what)


@question("fixed_merge_heads", lambda h, n, d_h: f"merged heads (h={h}, n={n}, d_h={d_h})")
def _fixed_merge(got, h, n, d_h):
    heads = _ramp(h, n, d_h)
    what, expected = f"merged heads (h={h}, n={n}, d_h={d_h})", mk.merge_heads(heads)
    # the bug left in: a plain reshape keeps every number but mixes heads and tokens, a layout slip
    diagnoses.check(got, expected, what, {"transposed": [heads.reshape(n, h * d_h)]}, "transposed")
    expect_close(got, expected, what)


@question("fixed_cache_bytes", lambda spec, s, B, bits: f"cache bytes of {_name(spec)} (s={s}, B={B}, {bits}-bit)")
def _fixed_cache(got, spec, s, B, bits):
    cfg = config(spec)
    what, expected = f"cache bytes of {_name(spec)} (s={s}, B={B}, {bits}-bit)", mk.kv_cache_bytes(cfg, s, B, bits)
    diagnoses.check(got, expected, what, {"k_or_v": [mk.kv_cache_bytes(cfg, s, B, bits) // 2],
                                          "h": cfg.num_heads, "h_kv": cfg.num_kv_heads}, "bits_vs_bytes", "k_and_v", "h_vs_h_kv")
    expect_int(got, expected, what, hints={Fraction(1, 2): "still only K (or only V): the cache holds both", **_BITS})


#: The mistake each buggy function of 06 makes: a letter of the list in the notebook's introduction.
MISTAKES = {"Q1": "C", "Q2": "F", "Q3": "H", "Q4": "E", "Q5": "B"}
#: The letters the list offers (the others are in none of the buggy functions).
MISTAKE_LETTERS = "ABCDEFGH"


@question("bug_diagnosis", lambda label: f"the mistake named for {label}")
def _bug_diagnosis(got, label):
    if type(got) is not str or got.strip().upper() not in MISTAKE_LETTERS:
        shown = repr(got) if type(got) is str else f"a {type(got).__name__}"
        raise AssertionError(f"{label}: answer one letter from A to H (the list at the top), got {shown}")
    if got.strip().upper() != MISTAKES[label]:
        raise AssertionError(f"{label}: mistake {got.strip().upper()} is not the one this function makes: "
                             "run the buggy function on a small case and see what differs")
