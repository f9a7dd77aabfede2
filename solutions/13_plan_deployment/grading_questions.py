"""The judge's questions of 13_plan_deployment: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction

import mha_kit as mk
from mha_course.judge import diagnoses
from mha_course.kernel.cases import config
from mha_course.judge.expect import expect_float, expect_int
from mha_course.judge.questions import BITS_HINT as _BITS
from mha_course.judge.questions import ROUND_UP as _ROUND_UP
from mha_course.judge.questions import question
from mha_course.judge.questions import spec_name as _name


def _is_number(got):
    return isinstance(got, numbers.Real) and not isinstance(got, bool)


def _expect_pair(got, what, kinds):
    """Raise unless ``got`` is a tuple of two numbers (``kinds`` names them in the message)."""
    if type(got) is not tuple or len(got) != 2:
        raise AssertionError(f"expected {what} as a tuple of 2 numbers {kinds}, got {type(got).__name__}")


def _ceil_bytes(numbers_, bits):
    return mk.elements_to_bytes(numbers_, bits)


# --- Q1: the cache on each GPU ---------------------------------------------------------------------

def _whole_cache(cfg, context_len, bits):
    """Bits-rounded bytes of one sequence's whole cache (every key-value head, or MLA's latent)."""
    return _ceil_bytes(context_len * cfg.num_layers * mk.kv_elements_per_token(cfg), bits)


@question("cache_per_gpu", lambda spec, s, tp, bits: f"cache per GPU of {_name(spec)} (t={tp}, {s:,} tokens, {bits}-bit)")
def _cache_per_gpu(got, spec, context_len, tp, bits):
    cfg = config(spec)
    expected = mk.kv_cache_bytes_per_gpu(cfg, context_len, tp, 1, bits)
    what = f"cache per GPU of {_name(spec)} (t={tp}, {context_len:,} tokens, {bits}-bit)"
    latent = isinstance(cfg, mk.LatentAttentionConfig)
    whole = _whole_cache(cfg, context_len, bits)
    split = ("MLA's latent belongs to no head: every GPU keeps all of it" if latent else
             "past h_kv GPUs the key-value heads are replicated: the cache stops shrinking")
    own = [(whole * Fraction(1, tp), split)]
    if not latent:
        own.append((whole, "each GPU keeps only the key-value heads its own query heads read"))
    diagnoses.known(got, expected, what, [(value, hint) for value, hint in own if value != expected])
    numbers_ = context_len * cfg.num_layers * mk.kv_elements_per_token_per_gpu(cfg, tp)  # on this GPU
    floor = numbers_ * bits // 8
    context = {"k_or_v": [_ceil_bytes(numbers_ // 2, bits)] if not latent else [2 * expected],
               "in_bits": [numbers_ * bits], "floor": [floor] if floor != expected else []}
    if not latent and cfg.num_heads != cfg.num_kv_heads:
        with_h = _ceil_bytes(context_len * cfg.num_layers * 2 * cfg.head_dim * max(cfg.num_heads // tp, 1), bits)
        context["with_h"] = [with_h] if with_h != expected else []
    diagnoses.check(got, expected, what, context, "k_and_v", "h_vs_h_kv", "bits_vs_bytes", "rounding")
    expect_int(got, expected, what, hints={**_BITS, Fraction(1, cfg.num_layers): "that is one layer: multiply by num_layers"},
               wrong={floor: _ROUND_UP} if floor != expected else None)


# --- Q2: the decode step against the batch --------------------------------------------------------

def _weight_share_s(facts, chip, tp, context_len):
    """Seconds one GPU spends reading its share of the weights: the batch-1 floor less one cache."""
    one = mk.decode_memory_floor(facts, chip, tp, context_len, 1)[0]
    return one - mk.kv_cache_bytes_per_gpu(facts.config, context_len, tp) / chip.hbm_bandwidth


@question("decode_floor", lambda model, gpu, tp, s, b: f"{model}, {tp} x {gpu}, batch {b}, {s:,} tokens")
def _decode_floor(got, model, gpu, tp, context_len, batch_size):
    facts, chip = mk.MODEL_FACTS[model], mk.GPUS[gpu]
    what = f"{model}, {tp} x {gpu}, batch {batch_size}, {context_len:,} tokens"
    _expect_pair(got, what, "(tpot_seconds, tokens_per_second_per_gpu)")
    step, rate = mk.decode_memory_floor(facts, chip, tp, context_len, batch_size)
    weights_s = _weight_share_s(facts, chip, tp, context_len)
    tpot_slips = [(step / batch_size, "a step gives every sequence a token: TPOT is the whole step"),
                  (mk.decode_memory_floor(facts, chip, tp, context_len, 1)[0],
                   "every sequence reads its own cache: it grows with the batch"),
                  (step + (tp - 1) * weights_s, "each GPU reads only its own share of the weights"),
                  (mk.decode_memory_floor(facts, chip, tp, context_len, batch_size, weight_fmt="fp8")[0],
                   "a bf16 weight is 2 bytes"),
                  (1e3 * step, "seconds, not milliseconds")]
    expect_float(got[0], step, f"TPOT of {what}", wrong=tpot_slips, rtol=1e-6)
    rate_slips = [(rate * tp, "per GPU: divide the replica's tokens by its tp GPUs"),
                  (1 / step / tp, "each step makes one token for every sequence of the batch"),
                  (1 / step, "each step makes one token for every sequence, over tp GPUs")]
    expect_float(got[1], rate, f"tokens/s/GPU of {what}", wrong=rate_slips, rtol=1e-6)


# --- Q3: when the cache outweighs the weights -----------------------------------------------------

@question("cache_outweighs_weights", lambda model, tp, s: f"crossover batch of {model} (t={tp}, {s:,} tokens)")
def _crossover(got, model, tp, context_len):
    facts = mk.MODEL_FACTS[model]
    weights, per_sequence = 2 * mk.dense_decoder_params(facts), mk.kv_cache_bytes_per_gpu(facts.config, context_len, tp)
    expected = mk.cache_crossover_batch(facts, tp, context_len)
    what = f"crossover batch of {model} (t={tp}, {context_len:,} tokens)"
    whole_weights = -(-weights // per_sequence)
    slips = [(weights // (tp * per_sequence), "the smallest whole batch that reaches the weights: round up"),
             (whole_weights, "each GPU reads its own share of the weights: divide them by tp"),
             (-(-weights // (2 * tp * per_sequence)), "a bf16 weight is 2 bytes")]
    diagnoses.known(got, expected, what, [(v, h) for v, h in slips if v != expected])
    if _is_number(got) and not isinstance(got, int) and math.isclose(float(got), weights / (tp * per_sequence)):
        raise AssertionError(f"{what}: a batch is a whole number of sequences: return an int")
    expect_int(got, expected, what)


# --- Q4: the experts a verification step reads ----------------------------------------------------

@question("verification_experts", lambda e, k_top, k: f"verifying {k} drafts (E={e}, top-{k_top})")
def _verification_experts(got, num_experts, top_k, k):
    what = f"verifying {k} drafts (E={num_experts}, top-{top_k})"
    _expect_pair(got, what, "(experts_read, ratio_to_one_decode_step)")
    touched = mk.experts_touched(k + 1, num_experts, top_k)
    one = mk.experts_touched(1, num_experts, top_k)
    slips = [(mk.experts_touched(k, num_experts, top_k),
              "one token short: the step runs the last accepted token and the k drafts"),
             (min((k + 1) * top_k, num_experts), "tokens share experts: count distinct experts, not routings"),
             (touched / num_experts, "that is the share of the experts: count them"),
             (1 - (1 - top_k / num_experts) ** (k + 1), "that is one expert's chance of being read: count the experts")]
    expect_float(got[0], touched, f"experts read {what}", wrong=slips, rtol=1e-9)
    ratio_slips = [(touched / num_experts, "one decode step reads top_k experts, not all of them"),
                   (touched / (k + 1) / one, "the ratio of the whole step's reads, not per token")]
    expect_float(got[1], touched / one, f"ratio to a decode step, {what}", wrong=ratio_slips, rtol=1e-9)


# --- Q5: the best number of drafts ----------------------------------------------------------------

def _best(speedups):
    """``(k, speed-up)`` of the largest speed-up, the smallest k on a tie."""
    best = max(speedups)
    k = speedups.index(best)
    return k, best


def _speedups(alpha, cost, max_k, growth, emitted=None, draft=None, verify=None):
    """Speed-ups of k = 0..max_k, with one rule replaced for a slip."""
    emitted = emitted or (lambda k: mk.speculative_expected_tokens(alpha, k))
    draft = draft or (lambda k: k * cost)
    verify = verify or (lambda k: 1 + growth * k)
    return [1.0] + [emitted(k) / (draft(k) + verify(k)) for k in range(1, max_k + 1)]


@question("best_draft_length", lambda a, c, m, g: f"best k (alpha={a}, c={c}, k<={m}, growth={g})")
def _best_draft_length(got, alpha, cost, max_k, growth):
    what = f"best k (alpha={alpha}, c={cost}, k<={max_k}, growth={growth})"
    if type(got) is not tuple or len(got) != 2:
        raise AssertionError(f"expected {what} as a tuple (best_k, speedup), got {type(got).__name__}")
    speedups = [1.0] + [mk.speculative_speedup(alpha, k, cost, 1 + growth * k) for k in range(1, max_k + 1)]
    best_k, best = _best(speedups)
    slips = [
        (_best(_speedups(alpha, cost, max_k, growth, emitted=lambda k: mk.speculative_expected_tokens(alpha, k - 1))),
         "one position short: a step of k drafts can emit k + 1 tokens"),
        (_best(_speedups(alpha, cost, max_k, growth, draft=lambda k: 0.0)), "the draft's runs cost time too"),
        (_best(_speedups(alpha, cost, max_k, growth, draft=lambda k: cost)), "the draft runs once per draft token: k runs"),
        (_best(_speedups(alpha, cost, max_k, growth, verify=lambda k: k + 1 + growth * k)),
         "verifying k + 1 tokens is one step of the target, not k + 1")]
    if best_k == 0 and max_k >= 1:  # the best of k >= 1 only: plain decoding left out
        k, value = _best(speedups[1:])
        slips.append(((k + 1, value), "when no draft pays, plain decoding (k = 0, speed-up 1) is best"))
    for value, hint in slips:
        if value is not None and not diagnoses.matches(value, (best_k, best)) and diagnoses.matches(got, value):
            raise AssertionError(f"{what}: expected ({best_k}, {best:.6g}), got ({got[0]}, {float(got[1]):.6g}): {hint}")
    if type(got[0]) is not int:
        raise AssertionError(f"expected the best k of {what} as an int, got {type(got[0]).__name__} ({got[0]!r})")
    near = got[0] in range(max_k + 1) and math.isclose(speedups[got[0]], best, rel_tol=1e-12)
    if got[0] != best_k and not near:
        raise AssertionError(f"{what}: the best k is {best_k}, got {got[0]}")
    expect_float(got[1], best, f"speed-up of {what}", rtol=1e-9)


# --- Q6: GPUs for a request rate -------------------------------------------------------------------

def _replicas_gpus(facts, chip, tp, context_len, rate, output_tokens, batch, tpot=None):
    """GPUs for whole replicas of ``batch`` at the floor of that batch (or at ``tpot``): a slip's value."""
    step = mk.decode_memory_floor(facts, chip, tp, context_len, batch)[0] if tpot is None else tpot
    return math.ceil(rate * output_tokens * step / batch) * tp


@question("gpus_for_rate", lambda model, gpu, tp, s, rate, n, target:
          f"GPUs, {model} at {rate:g}/s (t={tp}, {s:,} tokens)")
def _gpus_for_rate(got, model, gpu, tp, context_len, rate, output_tokens, target):
    facts, chip = mk.MODEL_FACTS[model], mk.GPUS[gpu]
    what = f"GPUs, {model} at {rate:g}/s (t={tp}, {context_len:,} tokens)"
    plan = mk.gpus_for_rate(facts, chip, tp, context_len, rate, output_tokens, target)
    expected, common = plan.gpus, (facts, chip, tp, context_len, rate, output_tokens)
    slips = [(int(plan.in_flight / plan.batch) * tp, "round up: a fraction of a replica is a whole one"),
             (expected // tp, "that counts replicas: each is tp GPUs"),
             (_replicas_gpus(*common, plan.batch_by_time), "the batch's caches must also fit beside the weights"),
             (_replicas_gpus(*common, min(plan.batch_by_time + 1, plan.batch_by_memory)),
              "the largest batch within the target: round it down"),
             (_replicas_gpus(*common, plan.batch, tpot=target),
              "a request stays output_tokens steps of the batch's own TPOT floor")]
    diagnoses.known(got, expected, what, [(v, h) for v, h in slips if v != expected])
    expect_int(got, expected, what)
