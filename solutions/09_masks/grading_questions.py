"""The judge's questions of 09_masks: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

import numpy as np

import mha_kit as mk

from mha_course.judge.expect import expect_close, expect_equal
from mha_course.judge.questions import question
from mha_course.judge import diagnoses


def cross_inputs(n, s, d, d_ctx, h, seed):
    """``(x, context, w_q, w_k, w_v, w_o)`` of a cross-attention case from ``seed``."""
    rng = np.random.default_rng(seed)
    x, context = rng.standard_normal((n, d)), rng.standard_normal((s, d_ctx))
    w_q, w_k, w_v, w_o = (rng.standard_normal(shape) / np.sqrt(shape[0]) for shape in
                          ((d, d), (d_ctx, d), (d_ctx, d), (d, d)))
    return x, context, w_q, w_k, w_v, w_o


@question("cross_attention", lambda n, s, d, d_ctx, h, seed: f"cross-attention (n={n}, s={s}, d={d}, d_context={d_ctx}, h={h})")
def _cross(got, n, s, d, d_ctx, h, seed):
    x, context, w_q, w_k, w_v, w_o = cross_inputs(n, s, d, d_ctx, h, seed)
    masks = [np.tril(np.ones((n, s), dtype=bool))] + ([mk.causal_mask(n, s)] if s >= n else [])
    masked = [(mk.multi_head_attention(x, w_q, w_k, w_v, w_o, h, context=context, mask=mask)[0],
               "cross-attention has no causal mask: every query sees every context token")
              for mask in masks if mask.any(axis=1).all()]
    what = f"cross-attention output (n={n}, s={s}, d={d}, d_context={d_ctx}, h={h})"
    expected = mk.multi_head_attention(x, w_q, w_k, w_v, w_o, h, context=context)[0]
    diagnoses.known(got, expected, what, masked)
    expect_close(got, expected, what)


def _expect_mask(got, expected, what, wrong):
    if not isinstance(got, np.ndarray) or got.dtype != bool:
        kind = f"an array of dtype {got.dtype}" if isinstance(got, np.ndarray) else type(got).__name__
        raise AssertionError(f"expected {what} as a numpy array of bool, got {kind}")
    if got.shape != expected.shape:
        raise AssertionError(f"shape of {what}: expected {expected.shape}, got {got.shape}")
    for hint, array in wrong.items():
        if not np.array_equal(got, expected) and np.array_equal(got, array):
            raise AssertionError(f"{what} does not match: {hint}")
    expect_equal(got, expected, what)


@question("sliding_window_mask", lambda n, w: f"sliding_window_mask({n}, window={w})")
def _window(got, n, w):
    i, j = np.indices((n, n))  # query and key positions of every entry
    what = f"sliding-window mask (n={n}, window={w})"
    expected = mk.sliding_window_mask(n, w)
    if isinstance(got, np.ndarray) and got.dtype == bool:
        diagnoses.check(got, expected, what, {"off_by_one": [(j <= i) & (j >= i - w), (j <= i) & (j > i - w + 1)]},
                        "mask_off_by_one")
    _expect_mask(got, expected, what, wrong={"the window is causal too: no key after the query": np.abs(i - j) < w})


@question("padded_causal_mask", lambda lengths, n: f"padded causal mask (lengths={lengths}, n={n})")
def _padded(got, lengths, n):
    causal = mk.causal_mask(n)
    _expect_mask(got, mk.padding_mask(lengths, n) & causal, f"padded causal mask (lengths={lengths}, n={n})", wrong={
        "the padding is on the right here: the real tokens come first": mk.padding_mask(lengths, n, side="left") & causal,
        "combine the padding mask with the causal mask (&)": np.broadcast_to(mk.padding_mask(lengths, n), (len(lengths), n, n)),
        "pad keys must be hidden too, not only the causal future": np.broadcast_to(causal, (len(lengths), n, n))})


@question("chunk_mask", lambda n_new, n_cached: f"mask of {n_new} new tokens over {n_cached} cached ones")
def _chunk(got, n_new, n_cached):
    s = n_cached + n_new
    _expect_mask(got, mk.causal_mask(n_new, s), f"mask of {n_new} new tokens over {n_cached} cached ones", wrong={
        "the new queries are the LAST n_new positions: the diagonal ends in the bottom-right corner":
            np.tril(np.ones((n_new, s), dtype=bool))})
