"""The judge's questions of 01_shapes: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

import functools

import numpy as np

import mha_kit as mk

from mha_course.judge import diagnoses
from mha_course.judge.expect import expect_close, expect_int, expect_shape
from mha_course.judge.questions import ramp as _ramp, question


@question("head_dim", lambda d, h: f"head size d_h (d={d}, h={h})")
def _head_dim(got, d, h):
    expect_int(got, mk.AttentionConfig(d, h).head_dim, f"head size d_h (d={d}, h={h})")


@functools.lru_cache(maxsize=None)
def _reference_shapes(B, n, d, h):
    """Shapes of the arrays mha_kit really builds for these sizes (once per grading process: the
    d = 4544 case builds a 165 MB output projection)."""
    q = mk.split_heads(np.zeros((B, n, d)), h)  # (B, n, d) -> (B, h, n, d_h)
    scores = q @ np.swapaxes(q, -1, -2)  # (B, h, n, d_h) @ (B, h, d_h, n) -> (B, h, n, n)
    concat = mk.merge_heads(q)  # (B, h, n, d_h) -> (B, n, h*d_h)
    return {"q": q.shape, "k": q.shape, "v": q.shape, "scores": scores.shape,
            "concat": concat.shape, "output": (concat @ np.zeros((d, d))).shape}


def _check_shapes(got, keys, B, n, d, h):
    if type(got) is not dict:
        raise AssertionError(f"head_shapes must return a dict of shape tuples, got {type(got).__name__}")
    ref = _reference_shapes(B, n, d, h)
    for key in keys:
        label = key.upper() if len(key) == 1 else key
        expect_shape(got.get(key), ref[key], f"{label}{' per head' if len(key) == 1 else ''} (B={B}, n={n}, d={d}, h={h})")


@question("head_shapes_qkv", lambda B, n, d, h: f"Q, K, V shapes (B={B}, n={n}, d={d}, h={h})")
def _head_shapes_qkv(got, B, n, d, h):
    _check_shapes(got, ("q", "k", "v"), B, n, d, h)


@question("head_shapes_rest", lambda B, n, d, h: f"scores, concat, output shapes (B={B}, n={n}, d={d}, h={h})")
def _head_shapes_rest(got, B, n, d, h):
    _check_shapes(got, ("scores", "concat", "output"), B, n, d, h)


@question("split_heads", lambda B, n, d, h: f"split_heads of a {(B, n, d)} input, h={h}")
def _split_heads(got, B, n, d, h):
    x = _ramp(B, n, d)
    what, expected = f"split_heads of a {x.shape} input, h={h}", mk.split_heads(x, h)
    # a plain reshape to (B, h, n, d_h) keeps every number but mixes tokens into heads: a layout slip
    diagnoses.check(got, expected, what, {"transposed": [x.reshape(B, h, n, d // h)]}, "transposed")
    expect_close(got, expected, what)


@question("merge_heads", lambda B, h, n, d_h: f"merge_heads of a {(B, h, n, d_h)} input")
def _merge_heads(got, B, h, n, d_h):
    x = _ramp(B, h, n, d_h)
    what, expected = f"merge_heads of a {x.shape} input", mk.merge_heads(x)
    # a plain reshape to (B, n, h*d_h) keeps every number but mixes heads into tokens: a layout slip
    diagnoses.check(got, expected, what, {"transposed": [x.reshape(B, n, h * d_h)]}, "transposed")
    expect_close(got, expected, what)
