"""The judge's questions of 02_params_compute: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

from fractions import Fraction


import mha_kit as mk

from mha_course.judge.expect import expect_int
from mha_course.kernel.cases import config
from mha_course.judge.questions import spec_name as _name, question
from mha_course.judge import diagnoses


@question("projection_params", lambda spec: f"parameters of one layer of {_name(spec)}")
def _projection_params(got, spec):
    cfg = config(spec)
    as_mha = mk.projection_params(cfg.with_kv_heads(None))
    what, expected = f"parameters of one layer of {_name(spec)}", mk.projection_params(cfg)
    diagnoses.check(got, expected, what, {"with_h": [as_mha]}, "h_vs_h_kv")
    expect_int(got, expected, what,
               hints={Fraction(1, 2): "did you count only W_Q and W_K (or forget two of the four matrices)?"})


@question("attention_macs", lambda spec, n, s: f"attention multiply-adds of {_name(spec)}, n={n}, s={s}")
def _attention_macs(got, spec, n, s):
    what, expected = f"attention multiply-adds of {_name(spec)}, n={n}, s={s}", mk.attention_macs(config(spec), s, num_queries=n)
    diagnoses.known(got, expected, what, [(expected // 2, "half of it: count the scores and the value mix"),
                                          (2 * expected, "count multiply-adds, not FLOPs (one multiply-add = 2 FLOPs)")])
    expect_int(got, expected, what)


@question("score_count", lambda spec, n: f"scores of {_name(spec)}, n={n}")
def _score_count(got, spec, n):
    expect_int(got, mk.score_count(config(spec), n), f"scores of {_name(spec)}, n={n}")


_COUNTERS = {"projection_params": mk.projection_params,
             "attention_macs": lambda cfg: mk.sequence_attention_macs(cfg, 64),
             "score_count": lambda cfg: mk.score_count(cfg, 64)}


@question("changes_with_h", lambda: "the set of counts that change with h")
def _changes_with_h(got):
    if type(got) is not set or not got <= set(_COUNTERS):
        raise AssertionError(f"changes_with_h() must return a set of names from {sorted(_COUNTERS)}, got {got!r}")
    for name, count in sorted(_COUNTERS.items()):
        changes = len({count(mk.AttentionConfig(512, h)) for h in (1, 2, 8)}) > 1
        if changes != (name in got):
            raise AssertionError(f"{name} {'changes' if changes else 'does not change'} with h: check your set")
