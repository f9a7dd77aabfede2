"""The judge's questions of 07_flash_attention: each question id's reference and diagnostic messages.

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
    BITS_HINT as _BITS,
    ROUND_UP as _ROUND_UP,
    expect_tuple as _expect_tuple,
    question,
)


def block_inputs(n, b, d_v, seed, scale):
    """``(scores, v_block)`` of one key block: ``(n, b)`` scores times ``scale``, ``(b, d_v)`` values."""
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((n, b)), rng.standard_normal((b, d_v))


def _state_of(scores, v_block):
    """``(m, l, acc)`` of one block: ``mha_kit``'s online update from the empty state."""
    n, d_v = scores.shape[0], v_block.shape[1]
    return mk.online_softmax_update(np.full(n, -np.inf), np.zeros(n), np.zeros((n, d_v)), scores, v_block)


def _expect_state(got, expected, what, wrong=None):
    _expect_tuple(got, 3, what)
    for name, part, ref in zip(("m", "l", "acc"), got, expected):
        hints = {hint: arrays[("m", "l", "acc").index(name)] for hint, arrays in (wrong or {}).items()}
        expect_close(part, ref, f"{name} of {what}", wrong=hints)


@question("block_state", lambda n, b, d_v, seed, scale: f"state of one block (n={n}, b={b}, scores x{scale})")
def _block_state(got, n, b, d_v, seed, scale):
    scores, v = block_inputs(n, b, d_v, seed, scale)
    with np.errstate(over="ignore", invalid="ignore"):
        unshifted = (scores.max(axis=1), np.exp(scores).sum(axis=1), np.exp(scores) @ v)
    what = f"the state of one block (n={n}, b={b}, scores x{scale})"
    expected = tuple(_state_of(scores, v))
    _expect_tuple(got, 3, what)
    diagnoses.check(got, expected, what, {"unshifted": [unshifted]}, "no_max_shift")
    _expect_state(got, expected, what)


def state_inputs(n, d_v, seed, empty_row):
    """Two states ``(m, l, acc)`` of blocks of keys; with ``empty_row``, row 0 of the first saw no key."""
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(2):
        m = 3 * rng.standard_normal(n)
        states.append((m, rng.uniform(1.0, 8.0, n), rng.standard_normal((n, d_v))))
    if empty_row:
        m, l, acc = states[0]
        m[0], l[0], acc[0] = -np.inf, 0.0, 0.0
    return states


def _merged_upside_down(a, b):
    """The classic wrong merge: each side scaled by exp(m_new - m_old), at least 1, instead of its inverse."""
    m = np.maximum(a[0], b[0])
    alpha, beta = np.exp(m - a[0]), np.exp(m - b[0])
    return m, alpha * a[1] + beta * b[1], alpha[:, None] * a[2] + beta[:, None] * b[2]


@question("merge_states", lambda n, d_v, seed, empty_row: f"merged state (n={n}, d_v={d_v}, empty row={empty_row})")
def _merge_states(got, n, d_v, seed, empty_row):
    a, b = state_inputs(n, d_v, seed, empty_row)
    summed = (np.maximum(a[0], b[0]), a[1] + b[1], a[2] + b[2])
    with np.errstate(over="ignore", invalid="ignore"):
        wrong = {"rescale each state's l and acc by exp(m_old - m_new) before adding them": summed,
                 "the factor is exp(m_old - m_new), at most 1, not exp(m_new - m_old)": _merged_upside_down(a, b)}
    expected = mk.merge_softmax_states(a, b)  # the one merge in mha_kit (Flash-Decoding merges its splits with it)
    _expect_state(got, expected, f"the merged state (n={n}, d_v={d_v}, empty row={empty_row})", wrong=wrong)


def qkv_inputs(n, s, d_h, seed):
    """``(q, k, v)`` of shapes ``(n, d_h)``, ``(s, d_h)``, ``(s, d_h)`` from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d_h)), rng.standard_normal((s, d_h)), rng.standard_normal((s, d_h))


@question("blockwise_attention", lambda n, s, d_h, block, seed: f"blockwise attention (n={n}, s={s}, block_size={block})")
def _blockwise(got, n, s, d_h, block, seed):
    q, k, v = qkv_inputs(n, s, d_h, seed)
    what = f"blockwise attention (n={n}, s={s}, d_h={d_h}, block_size={block})"
    whole = s - s % block
    expected = mk.flash_attention(q, k, v, block_size=block)
    context = {"unscaled": [mk.softmax(q @ k.T) @ v],
               "rescaled": [mk.softmax(q @ k.T / d_h) @ v, mk.softmax(q @ k.T * np.sqrt(d_h)) @ v],
               "whole_blocks": [mk.scaled_dot_product_attention(q, k[:whole], v[:whole])[0]] if 0 < whole < s else []}
    diagnoses.check(got, expected, what, context, "scale_missing", "scale_wrong", "ragged_last_block")
    expect_close(got, expected, what)


@question("score_bytes_saved", lambda spec, n, bits: f"score-matrix bytes of {_name(spec)} (n={n}, {bits}-bit)")
def _score_bytes(got, spec, n, bits):
    cfg = config(spec)
    expected = mk.score_matrix_bytes(cfg, n, bits)
    what = f"bytes of the score matrix of one layer of {_name(spec)} (n={n}, {bits}-bit)"
    in_bits = cfg.num_heads * n * n * bits
    floor = in_bits // 8
    diagnoses.check(got, expected, what, {"in_bits": [in_bits], "floor": [floor] if floor != expected else []},
                    "bits_vs_bytes", "rounding")
    expect_int(got, expected, what, wrong={floor: _ROUND_UP} if floor != expected else {},
               hints={**_BITS, Fraction(1, cfg.num_heads): "that is one head: every head has its own n x n scores"})
