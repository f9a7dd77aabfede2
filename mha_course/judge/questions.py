"""The reference and the diagnostic messages of every question, keyed by question id.

Each :class:`Question` knows how to judge one result for one case: ``check(got, *case)`` raises
``AssertionError`` with a one-line message (the :mod:`mha_course.expect` helpers), computing the
reference here with ``mha_kit``. The inputs a case stands for (random arrays from a seed, a config
from a preset name) are rebuilt exactly as the test cell's ``_call`` builds them in the kernel.

Runs in the grading process only: this module is never part of the grading kernel's learner
edition. Question ids are what the test cells pass to ``run``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional

import numpy as np

import mha_kit as mk

from ..expect import expect_close, expect_equal, expect_float, expect_int, expect_shape
from .cases import config

QUESTIONS: dict = {}


@dataclass(frozen=True)
class Question:
    """How to judge the results of one question id."""

    check: Callable  # check(got, *case): raises AssertionError with a one-line reason
    describe: Callable  # describe(*case) -> str, names the case in messages
    static: Optional[Callable] = None  # static({answer grade_id: source}) -> reason or None


def question(qid, describe, static=None):
    """Register the decorated ``check(got, *case)`` as question ``qid``."""
    def register(check):
        if qid in QUESTIONS:
            raise ValueError(f"question id {qid!r} registered twice")
        QUESTIONS[qid] = Question(check, describe, static)
        return check
    return register


def _name(spec):
    return spec if type(spec) is str else "a custom config"


def _rng_arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


# ---- 01_shapes -------------------------------------------------------------------------------

@question("head_dim", lambda d, h: f"head size d_h (d={d}, h={h})")
def _head_dim(got, d, h):
    expect_int(got, mk.AttentionConfig(d, h).head_dim, f"head size d_h (d={d}, h={h})")


def _reference_shapes(B, n, d, h):
    """Shapes of the arrays mha_kit really builds for these sizes."""
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


def _ramp(*shape):
    """``np.arange`` in ``shape``, floats: distinct entries, so any mix-up shows."""
    return np.arange(np.prod(shape), dtype=float).reshape(shape)


@question("split_heads", lambda B, n, d, h: f"split_heads of a {(B, n, d)} input, h={h}")
def _split_heads(got, B, n, d, h):
    x = _ramp(B, n, d)
    expect_close(got, mk.split_heads(x, h), f"split_heads of a {x.shape} input, h={h}",
                 wrong={"a plain reshape to (B, h, n, d_h) mixes tokens into heads: "
                        "reshape to (B, n, h, d_h), then swap axes 1 and 2": x.reshape(B, h, n, d // h)})


@question("merge_heads", lambda B, h, n, d_h: f"merge_heads of a {(B, h, n, d_h)} input")
def _merge_heads(got, B, h, n, d_h):
    x = _ramp(B, h, n, d_h)
    expect_close(got, mk.merge_heads(x), f"merge_heads of a {x.shape} input",
                 wrong={"a plain reshape to (B, n, h*d_h) mixes heads: swap axes 1 and 2 first": x.reshape(B, n, h * d_h)})


# ---- 02_params_compute -----------------------------------------------------------------------

@question("projection_params", lambda spec: f"parameters of one {_name(spec)} layer")
def _projection_params(got, spec):
    cfg = config(spec)
    as_mha = mk.projection_params(cfg.with_kv_heads(None))
    wrong = {as_mha: "GQA counted as MHA: W_K and W_V have h_kv heads, not h"} if cfg.num_kv_heads != cfg.num_heads else {}
    expect_int(got, mk.projection_params(cfg), f"parameters of one {_name(spec)} layer", wrong=wrong,
               hints={Fraction(1, 2): "did you count only W_Q and W_K (or forget two of the four matrices)?"})


@question("attention_macs", lambda spec, n, s: f"attention multiply-adds of {_name(spec)}, n={n}, s={s}")
def _attention_macs(got, spec, n, s):
    expect_int(got, mk.attention_macs(config(spec), s, num_queries=n), f"attention multiply-adds of {_name(spec)}, n={n}, s={s}",
               hints={Fraction(1, 2): "did you count the scores but not the value mix (or the reverse)?",
                      2: "count multiply-adds, not FLOPs (one multiply-add = 2 FLOPs)"})


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


# ---- 03_kv_cache -----------------------------------------------------------------------------

_BITS = {8: "bits, not bytes: divide by 8"}


@question("kv_bytes_read", lambda h_kv, d_h, s, bits: f"bytes read per token (h_kv={h_kv}, d_h={d_h}, s={s}, {bits}-bit)")
def _kv_bytes_read(got, h_kv, d_h, s, bits):
    cfg = mk.AttentionConfig(h_kv * d_h, h_kv, h_kv, d_h)
    expected = mk.kv_bytes_read(cfg, s, bits)
    floor = 2 * h_kv * d_h * s * bits // 8
    wrong = {floor: "round up to a whole byte: a partly used byte is still stored"} if floor != expected else {}
    expect_int(got, expected, f"bytes read per token by one layer (h_kv={h_kv}, d_h={d_h}, s={s}, {bits}-bit)",
               wrong=wrong, hints={**_BITS, Fraction(1, 2): "did you forget K or V?", 2: "did you count K and V twice?"})


@question("cache_bytes_per_token", lambda spec, bits: f"cache bytes per token of {_name(spec)} ({bits}-bit)")
def _cache_bytes_per_token(got, spec, bits):
    cfg = config(spec)
    as_mha = mk.kv_cache_bytes_per_token(cfg.with_kv_heads(None), bits)
    wrong = {as_mha: "GQA counted as MHA: only the h_kv key-value heads are cached"} if cfg.num_kv_heads != cfg.num_heads else {}
    floor = cfg.num_layers * mk.kv_elements_per_token(cfg) * bits // 8
    expected = mk.kv_cache_bytes_per_token(cfg, bits)
    if floor != expected:
        wrong[floor] = "round up to a whole byte: a partly used byte is still stored"
    expect_int(got, expected, f"cache bytes per token of {_name(spec)} ({bits}-bit)", wrong=wrong,
               hints={**_BITS, Fraction(1, 2): "did you forget K or V?",
                      Fraction(1, cfg.num_layers): "that is one layer: multiply by num_layers"})


@question("mla_cache_bytes_per_token", lambda spec, bits: f"MLA cache bytes per token of {_name(spec)} ({bits}-bit)")
def _mla_cache(got, spec, bits):
    cfg = config(spec)
    no_rope = -(-cfg.num_layers * cfg.kv_lora_rank * bits // 8)
    full_heads = -(-cfg.num_layers * cfg.num_heads * (cfg.qk_head_dim + cfg.v_head_dim) * bits // 8)
    expect_int(got, mk.kv_cache_bytes_per_token(cfg, bits), f"MLA cache bytes per token of {_name(spec)} ({bits}-bit)",
               wrong={no_rope: "the shared rotary key (qk_rope_head_dim) is cached too",
                      full_heads: "that counts full per-head keys and values: MLA caches only the latent"},
               hints=_BITS)


@question("kv_cache_bytes", lambda spec, s, B, bits: f"cache bytes of {_name(spec)} (s={s}, B={B}, {bits}-bit)")
def _kv_cache_bytes(got, spec, s, B, bits):
    cfg = config(spec)
    expect_int(got, mk.kv_cache_bytes(cfg, s, B, bits), f"cache bytes of {_name(spec)} (s={s}, B={B}, {bits}-bit)",
               hints={**_BITS, Fraction(1, cfg.num_layers): "multiply by num_layers", Fraction(1, B): "multiply by batch_size"})


@question("max_context", lambda spec, memory, bits, B: f"longest {_name(spec)} context in {memory:,} bytes ({bits}-bit, B={B})")
def _max_context(got, spec, memory, bits, B):
    expect_int(got, mk.max_context_tokens(config(spec), memory, bits, B),
               f"longest {_name(spec)} context in {mk.format_bytes(memory)} ({bits}-bit, B={B})",
               hints={8: "bits, not bytes", Fraction(1, 8): "bytes, not bits"})


# ---- 04_implement_attention ------------------------------------------------------------------

@question("softmax", lambda shape, axis, seed: f"softmax of a {shape} array along axis {axis}")
def _softmax(got, shape, axis, seed):
    (x,) = _rng_arrays(seed, shape)
    other = {"that is softmax along another axis: use the axis argument": mk.softmax(x, axis=0)} if axis != 0 else {}
    expect_close(got, mk.softmax(x, axis=axis), f"softmax of a {tuple(shape)} array along axis {axis}", wrong=other)


def scores_array(rows):
    """The array a literal list of rows stands for; the strings ``"-inf"``/``"inf"`` are infinities."""
    return np.array(rows, dtype=float)


@question("softmax_extreme", lambda rows: f"softmax of {rows}")
def _softmax_extreme(got, rows):
    x = scores_array(rows)
    expect_close(got, mk.softmax(x), f"softmax of {np.array2string(x, separator=', ')}")


@question("causal_mask", lambda n: f"causal_mask({n})")
def _causal_mask(got, n):
    expect_equal(got, mk.causal_mask(n), f"causal_mask({n})")


def _attention_mistakes(q, k, v, mask=None):
    """Outputs of the classic mistakes, so the message can name the one made."""
    raw = q @ k.T
    masked = (lambda s: s) if mask is None else (lambda s: np.where(mask, s, -np.inf))
    out = {"looks like the 1/sqrt(d_h) scale is missing": mk.softmax(masked(raw)) @ v,
           "scaled by 1/d_h instead of 1/sqrt(d_h)": mk.softmax(masked(raw / q.shape[-1])) @ v}
    if mask is not None:
        after = mk.softmax(raw / np.sqrt(q.shape[-1])) * mask
        out["the mask was applied after softmax: set scores to -inf before it"] = after @ v
    return out


@question("attention", lambda n, s, d_h, d_v, causal, seed: f"attention output (n={n}, s={s}, d_h={d_h}, causal={causal})")
def _attention(got, n, s, d_h, d_v, causal, seed):
    q, k, v = _rng_arrays(seed, (n, d_h), (s, d_h), (s, d_v))
    mask = mk.causal_mask(n, s) if causal else None
    expect_close(got, mk.scaled_dot_product_attention(q, k, v, mask)[0],
                 f"attention output (n={n}, s={s}, d_h={d_h}, causal={causal})", wrong=_attention_mistakes(q, k, v, mask))


def mha_inputs(d, h, n, seed):
    """``(x, weights)`` of a multi-head case: the book's toy example when ``seed`` is None."""
    if seed is None:
        x, weights, _ = mk.toy_example()
        return x, weights
    return np.random.default_rng(seed).standard_normal((n, d)), mk.init_weights(mk.AttentionConfig(d, h), seed=seed)


@question("multi_head_attention", lambda d, h, n, seed, causal: f"multi-head output (d={d}, h={h}, n={n}, causal={causal})")
def _multi_head(got, d, h, n, seed, causal):
    x, weights = mha_inputs(d, h, n, seed)
    expect_close(got, mk.multi_head_attention(x, *weights, h, causal=causal)[0],
                 f"multi-head output (n={x.shape[0]}, d={x.shape[1]}, h={h}, causal={causal})")


def _gqa_check(got, h, h_kv, n, s, d_h, seed):
    q, k, v = _rng_arrays(seed, (h, n, d_h), (h_kv, s, d_h), (h_kv, s, d_h))
    g = h // h_kv
    modulo = np.stack([mk.scaled_dot_product_attention(q[i], k[i % h_kv], v[i % h_kv])[0] for i in range(h)])
    wrong = {f"query head i must read KV head i // g (g={g}), not i % h_kv": modulo} if g not in (1, h) else {}
    expect_close(got, mk.grouped_attention(q, k, v)[0], f"grouped attention output (h={h}, h_kv={h_kv}, n={n}, s={s})",
                 wrong=wrong)


_COPIES = {"repeat", "tile", "take", "broadcast_to", "kron"}  # each builds g copies of K or V


def no_copies(answers):
    """Reason why ``grouped_attention``'s code copies K or V (``np.repeat``, a fancy index), or None."""
    source = answers.get("gqa_answer", "")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None  # the kernel reported it; the cases fail anyway
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if isinstance(node, ast.alias):
            name = node.name.rpartition(".")[2]
        if name in _COPIES:
            return f"grouped_attention uses {name}, which copies K or V once per query head: reshape the queries instead"
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in ("k", "v"):
            if any(isinstance(part, (ast.Call, ast.List, ast.ListComp)) for part in ast.walk(node.slice)):
                return f"grouped_attention indexes {node.value.id} with an array, which copies it: reshape the queries instead"
    return None


@question("grouped_attention", lambda h, h_kv, n, s, d_h, seed: f"grouped attention (h={h}, h_kv={h_kv}, n={n}, s={s})")
def _grouped(got, *case):
    _gqa_check(got, *case)


@question("grouped_attention_no_copies", lambda h, h_kv, n, s, d_h, seed: f"grouped attention without copies (h={h}, h_kv={h_kv})",
          static=no_copies)
def _grouped_no_copies(got, *case):
    _gqa_check(got, *case)


# ---- 05_decoding -----------------------------------------------------------------------------

def decode_inputs(d, h, h_kv, n, seed):
    """``(x, weights)`` of a decode case: n random tokens and seeded weights."""
    weights = mk.init_weights(mk.AttentionConfig(d, h, h_kv), seed=seed)
    return np.random.default_rng(seed).standard_normal((n, d)), weights


@question("decode_step", lambda d, h, h_kv, n, seed: f"decode steps (d={d}, h={h}, h_kv={h_kv}, n={n})")
def _decode_step(got, d, h, h_kv, n, seed):
    x, weights = decode_inputs(d, h, h_kv, n, seed)
    full = mk.multi_head_attention(x, *weights, h, num_kv_heads=h_kv, causal=True)[0]  # (n, d)
    expect_close(got, full, f"outputs of {n} decode steps, stacked (d={d}, h={h}, h_kv={h_kv}), against the causal pass")


@question("decode_cache", lambda d, h, h_kv, n, seed: f"cache after {n} steps (h_kv={h_kv})")
def _decode_cache(got, d, h, h_kv, n, seed):
    if type(got) is not tuple or len(got) != 3:
        raise AssertionError(f"expected (lengths, keys, values) from the test, got {type(got).__name__}")
    lengths, keys, values = got
    if lengths != list(range(1, n + 1)):
        raise AssertionError(f"cache lengths after each step should be {list(range(1, n + 1))}, got {lengths}")
    x, weights = decode_inputs(d, h, h_kv, n, seed)
    expect_close(keys, mk.split_heads(x @ weights.w_k, h_kv), f"cached keys (h_kv={h_kv})")
    expect_close(values, mk.split_heads(x @ weights.w_v, h_kv), f"cached values (h_kv={h_kv})")


@question("decode_step_macs", lambda spec, s: f"multiply-adds of one {_name(spec)} decode step (s={s})")
def _decode_macs(got, spec, s):
    cfg = config(spec)
    as_kv_heads = 2 * cfg.num_kv_heads * s * cfg.head_dim
    wrong = {as_kv_heads: "every query head computes its own scores: use h, not h_kv"} if cfg.num_kv_heads != cfg.num_heads else {}
    expect_int(got, mk.attention_macs(cfg, s), f"multiply-adds of one {_name(spec)} decode step (s={s})", wrong=wrong,
               hints={Fraction(1, 2): "scores and value mix cost the same: count both", 2: "multiply-adds, not FLOPs"})


@question("decode_flops_per_byte", lambda spec, bits: f"FLOPs per byte of {_name(spec)} ({bits}-bit)")
def _flops_per_byte(got, spec, bits):
    cfg = config(spec)
    hints = {0.5: "that is multiply-adds per byte: one multiply-add is 2 FLOPs"}
    if cfg.group_size != 1:
        hints[1 / cfg.group_size] = "the g = h / h_kv query heads sharing a KV head all use it"
    expect_float(got, mk.arithmetic_intensity(cfg, 1024, bits), f"FLOPs per byte of {_name(spec)} ({bits}-bit)", hints=hints)


# ---- 06_spot_the_bug: the buggy functions of the notebook, to recognise a bug left in ----------

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
    expect_close(got, mk.scaled_dot_product_attention(q, k, v)[0], f"attention (n={n}, s={s}, d_h={d_h})",
                 wrong={"still divided by d_h: the scale is 1/sqrt(d_h)": buggy_attention(q, k, v),
                        "no scale at all: divide the scores by sqrt(d_h)": mk.softmax(q @ k.T) @ v})


@question("fixed_grouped_attention", lambda h, h_kv, n, seed: f"grouped attention (h={h}, h_kv={h_kv})")
def _fixed_grouped(got, h, h_kv, n, seed):
    q, k, v = _rng_arrays(seed, (h, n, 4), (h_kv, n, 4), (h_kv, n, 4))
    wrong = {"query head i must read key-value head i // g, not i % h_kv": buggy_grouped_attention(q, k, v)}
    expect_close(got, mk.grouped_attention(q, k, v)[0], f"grouped attention (h={h}, h_kv={h_kv})",
                 wrong=wrong if h // h_kv not in (1, h) else {})


@question("fixed_merge_heads", lambda h, n, d_h: f"merged heads (h={h}, n={n}, d_h={d_h})")
def _fixed_merge(got, h, n, d_h):
    heads = _ramp(h, n, d_h)
    expect_close(got, mk.merge_heads(heads), f"merged heads (h={h}, n={n}, d_h={d_h})",
                 wrong={"a plain reshape mixes heads and tokens: swap the first two axes first": heads.reshape(n, h * d_h)})


@question("fixed_cache_bytes", lambda spec, s, B, bits: f"cache bytes of {_name(spec)} (s={s}, B={B}, {bits}-bit)")
def _fixed_cache(got, spec, s, B, bits):
    expect_int(got, mk.kv_cache_bytes(config(spec), s, B, bits), f"cache bytes of {_name(spec)} (s={s}, B={B}, {bits}-bit)",
               hints={Fraction(1, 2): "still only K (or only V): the cache holds both", **_BITS})
