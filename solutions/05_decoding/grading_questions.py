"""The judge's questions of 05_decoding: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

import mha_kit as mk

from mha_course.judge.expect import expect_close, expect_float, expect_int
from mha_course.kernel.cases import config
from mha_course.judge.questions import spec_name as _name, question
from mha_course.judge import diagnoses


def decode_inputs(d, h, h_kv, n, seed):
    """``(x, weights)`` of a decode case: n random tokens and seeded weights."""
    weights = mk.init_weights(mk.AttentionConfig(d, h, h_kv), seed=seed)
    return np.random.default_rng(seed).standard_normal((n, d)), weights


@question("decode_step", lambda d, h, h_kv, n, seed: f"decode steps (d={d}, h={h}, h_kv={h_kv}, n={n})")
def _decode_step(got, d, h, h_kv, n, seed):
    x, weights = decode_inputs(d, h, h_kv, n, seed)
    full = mk.multi_head_attention(x, *weights, h, num_kv_heads=h_kv, causal=True)[0]  # (n, d)
    what = f"outputs of {n} decode steps, stacked (d={d}, h={h}, h_kv={h_kv}), against the causal pass"

    w_q, *others = weights

    def scaled(factor):  # the causal pass with every score multiplied by factor
        return mk.multi_head_attention(x, w_q * factor, *others, h, num_kv_heads=h_kv, causal=True)[0]

    d_h = d // h
    diagnoses.check(got, full, what, {"unscaled": [scaled(np.sqrt(d_h))], "rescaled": [scaled(1 / np.sqrt(d_h))]},
                    "scale_missing", "scale_wrong")
    expect_close(got, full, what)


@question("decode_cache", lambda d, h, h_kv, n, seed: f"cache after {n} steps (h_kv={h_kv})")
def _decode_cache(got, d, h, h_kv, n, seed):
    if type(got) is not tuple or len(got) != 3:
        raise AssertionError(f"expected (lengths, keys, values) from the test, got {type(got).__name__}")
    lengths, keys, values = got
    if type(lengths) is not list or lengths != list(range(1, n + 1)):
        raise AssertionError(f"cache lengths after each step should be {list(range(1, n + 1))}, got {lengths}")
    x, weights = decode_inputs(d, h, h_kv, n, seed)
    expect_close(keys, mk.split_heads(x @ weights.w_k, h_kv), f"cached keys (h_kv={h_kv})")
    expect_close(values, mk.split_heads(x @ weights.w_v, h_kv), f"cached values (h_kv={h_kv})")


@question("decode_step_macs", lambda spec, s: f"multiply-adds of one decode step of {_name(spec)} (s={s})")
def _decode_macs(got, spec, s):
    cfg = config(spec)
    as_kv_heads = 2 * cfg.num_kv_heads * s * cfg.head_dim
    wrong = {as_kv_heads: "every query head computes its own scores: use h, not h_kv"} if cfg.num_kv_heads != cfg.num_heads else {}
    expect_int(got, mk.attention_macs(cfg, s), f"multiply-adds of one decode step of {_name(spec)} (s={s})", wrong=wrong,
               hints={Fraction(1, 2): "scores and value mix cost the same: count both", 2: "multiply-adds, not FLOPs"})


@question("decode_flops_per_byte", lambda spec, bits: f"FLOPs per byte of {_name(spec)} ({bits}-bit)")
def _flops_per_byte(got, spec, bits):
    cfg = config(spec)
    hints = {0.5: "that is multiply-adds per byte: one multiply-add is 2 FLOPs"}
    if cfg.group_size != 1:
        hints[1 / cfg.group_size] = "the g = h / h_kv query heads sharing a KV head all use it"
    expect_float(got, mk.arithmetic_intensity(cfg, 1024, bits), f"FLOPs per byte of {_name(spec)} ({bits}-bit)", hints=hints)
