"""The judge's questions of 11_serving_2026: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import mha_kit as mk
from mha_course.judge.expect import count_value, expect_float, expect_int, merge_slips, overflow_message
from mha_course.kernel.cases import config
from mha_course.judge.questions import question
from mha_course.judge.questions import spec_name as _name
from mha_course.judge import diagnoses


# --- Q1: speculative decoding ----------------------------------------------------------------------

def _emitted(alpha, positions):
    """``1 + alpha + ... + alpha^(positions - 1)``, the limit at ``alpha = 1`` included."""
    return float(positions) if alpha == 1 else (1 - alpha ** positions) / (1 - alpha)


@question("expected_tokens", lambda alpha, k: f"expected tokens per step (alpha={alpha}, k={k})")
def _expected_tokens(got, alpha, k):
    slips = [(_emitted(alpha, k), "one position short: the step can emit k + 1 tokens"),
             (k * alpha, "k * alpha checks every draft: the first rejection ends the checking"),
             (1 + k * alpha, "1 + k * alpha checks every draft: the first rejection ends the checking"),
             (_emitted(alpha, k + 1) - 1, "accepted drafts only: every step also adds one token of the target's"),
             (math.inf if alpha == 1 else 1 / (1 - alpha), "that is the limit for any k: only k drafts are checked")]
    expect_float(got, mk.speculative_expected_tokens(alpha, k),
                 f"expected tokens per step (alpha={alpha}, k={k})", wrong=slips, rtol=1e-9)


# --- Q2: prefix caching --------------------------------------------------------------------------

def _tokens(items):
    """Token ids of a case: ints, and ``(start, stop)`` pairs for runs (as the test cell's ``_call``)."""
    return [t for item in items for t in (range(*item) if type(item) is tuple else [item])]


def _stream(requests):
    return [(_tokens(prompt), _tokens(output)) for prompt, output in requests]


def _blocks(stream, size, chained=True):
    """A block cache that never evicts, for the stream (vLLM's rule, or its hashes unchained)."""
    return mk.PrefixBlockCache(size, sum(len(p) + len(o) for p, o in stream) // size + 1, chained=chained)


def _uncapped(stream, size):
    """Whole cached blocks each prompt matches, the last prompt token not held back (a slip's value)."""
    cache, fresh, found = _blocks(stream, size), 1 + max(t for p, o in stream for t in (*p, *o)), []
    for prompt, output in stream:
        found.append(cache.match((*prompt, fresh)))  # one token more: its cap no longer bites
        cache.insert(mk.computed_tokens(prompt, output))
    return found


def _reuse_slips(stream, size):
    """``[(reused per request, hint)]`` of the designed mistakes, most telling first, from mha_kit's caches."""
    everything = sum(len(p) + len(o) for p, o in stream) + 1
    fresh = 1 + max(t for p, o in stream for t in (*p, *o))
    sampled = [(p, (*o, fresh)) for p, o in stream]  # the sampled token cached as if it had been run
    prompts = [(p, ()) for p, o in stream]  # nothing of the output cached
    uncapped = _uncapped(stream, size)
    return [
        (mk.serve_stream(mk.RadixPrefixCache(everything), stream),
         "only full blocks are shared: the tokens of a part-matching block are computed again"),
        ([min(u, len(p) - 1) for u, (p, _) in zip(uncapped, stream)],
         "reuse comes in whole blocks: the last token's block is computed again"),
        (uncapped, "the last prompt token is always computed again, even when cached"),
        (mk.serve_stream(_blocks(stream, size, chained=False), stream),
         "a block matches only after the same prefix: its key covers all tokens before it"),
        (mk.serve_stream(_blocks(sampled, size), sampled),
         "the last output token was sampled, never run: it has no keys or values"),
        (mk.serve_stream(_blocks(prompts, size), prompts),
         "a finished request leaves the blocks of its output in the cache too"),
    ]


def _describe_reuse(requests, size):
    return f"prompt tokens reused ({len(requests)} requests, blocks of {size})"


@question("block_reuse", _describe_reuse)
def _block_reuse(got, requests, size):
    stream, what = _stream(requests), _describe_reuse(requests, size)
    expected = mk.serve_stream(_blocks(stream, size), stream)
    if type(got) is not list:
        raise AssertionError(f"expected {what} as a list of ints, got {type(got).__name__}")
    if len(got) != len(expected):
        raise AssertionError(f"{what}: expected {len(expected)} numbers (one per request), got {len(got)}")
    for item, want in zip(got, expected):
        if count_value(item) is None:
            raise AssertionError(f"{what}: expected plain ints, got {type(item).__name__} ({item!r})")
        if overflow_message(item, want, what):
            raise AssertionError(overflow_message(item, want, what))
    got = [count_value(item) for item in got]  # numpy ints are counts too
    if got == expected:
        return
    i = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
    message = f"{what}: request {i + 1} of {len(expected)} reuses {expected[i]}, got {got[i]}"
    hint = next((hint for wrong, hint in _reuse_slips(stream, size) if wrong != expected and got == wrong), None)
    raise AssertionError(f"{message}: {hint}" if hint else message)


# --- Q3: FP8 cache -------------------------------------------------------------------------------

@question("fp8_batch", lambda model, gpu, num_gpus, context_len:
          f"FP8 cache of {model} on {num_gpus} x {gpu} ({context_len:,} tokens)")
def _fp8_batch(got, model, gpu, num_gpus, context_len):
    cfg = mk.PRESETS[model]
    weights = mk.elements_to_bytes(mk.dense_decoder_params(mk.MODEL_FACTS[model]), "bf16")
    free = num_gpus * mk.GPUS[gpu].hbm_bytes - weights
    per_sequence = mk.kv_cache_bytes(cfg, context_len, fmt="fp8_e4m3")
    if type(got) is not tuple or len(got) != 2:
        raise AssertionError(f"expected (bytes_per_sequence, sequences) as a tuple of 2 ints, got {type(got).__name__}")
    hints = {2: "FP8 stores one byte per number", Fraction(1, cfg.num_layers): "one layer's worth: count every layer"}
    what = f"FP8 bytes per sequence of {model} ({context_len:,} tokens)"
    diagnoses.check(got[0], per_sequence, what, {"h": cfg.num_heads, "h_kv": cfg.num_kv_heads, "k_or_v": [per_sequence // 2]},
                    "h_vs_h_kv", "k_and_v")
    expect_int(got[0], per_sequence, what, hints=hints)
    fits = free // per_sequence
    expect_int(got[1], fits, f"sequences of {model} that fit in {free:,} bytes",
               wrong={fits + 1: "a sequence needs its whole cache: round down"})


# --- Q4: time to first token ---------------------------------------------------------------------

@question("ttft_seconds", lambda model, gpu, n: f"TTFT of {model} on one {gpu} ({n:,}-token prompt)")
def _ttft(got, model, gpu, n):
    facts, chip = mk.MODEL_FACTS[model], mk.GPUS[gpu]
    step = mk.roofline_step(facts, chip)
    weights = step.weight_bytes / chip.hbm_bandwidth
    written = step.kv_bytes_per_token * n / chip.hbm_bandwidth  # the prompt's keys and values, every layer
    memory = weights + written
    compute = step.flops_per_token * n / chip.bf16_flops
    every_weight = 2 * mk.dense_decoder_params(facts) * n / chip.bf16_flops
    no_head = compute - 2 * facts.vocab_size * facts.config.d_model * n / chip.bf16_flops
    slips = [(max(weights, compute), "the step also writes every prompt token's keys and values: bytes too"),
             (memory + compute, "the step takes the longer of the two times, not their sum"),
             (max(memory, compute / 2), "compute too fast by half: a multiply-add is 2 FLOPs"),
             (memory, "memory time only: a long prompt is compute-bound"),
             (compute, "compute only: reading the weights sets the pace of a short prompt"),
             (max(memory, every_weight), "the input embedding table is looked up, not multiplied"),
             (max(memory, no_head), "the output head is multiplied, not looked up"),
             (max(weights / 2 + written, compute), "memory time too short by half: a bf16 weight is 2 bytes"),
             (1e3 * step(n, 0, 0), "seconds, not milliseconds")]
    expect_float(got, step(n, 0, 0), f"TTFT of {model} on one {gpu} ({n:,}-token prompt)", wrong=slips, rtol=1e-3)


# --- Q5: KV transfer -----------------------------------------------------------------------------

@question("handoff_seconds", lambda spec, n, gbit, bits:
          f"handoff of the cache of {_name(spec)} ({n:,} tokens, {gbit} Gb/s, {bits}-bit)")
def _handoff(got, spec, n, gbit, bits):
    cfg = config(spec)
    expected = mk.kv_transfer_seconds(cfg, n, gbit * 1e9 / 8, bits)
    hints = {}
    for ratio, hint in ((Fraction(1, 8), "a link rated in Gb/s moves gigabits: 8 bits to a byte"),
                        (8, "bits for bytes?"),
                        (Fraction(1, 2), diagnoses.CATALOGUE["k_and_v"].message),
                        (Fraction(1, cfg.num_layers), "one layer's worth: every layer's cache moves"),
                        (cfg.num_heads // cfg.num_kv_heads, "h for h_kv?"),
                        (10**9 / 2**30, "giga in a link rate is 10^9, not 2^30"),
                        (1000, "seconds, not milliseconds")):
        if ratio != 1:
            hints[ratio] = f"{hints[ratio]} {hint}" if ratio in hints else hint
    expect_float(got, expected, f"handoff of the cache of {_name(spec)} ({n:,} tokens, {gbit} Gb/s, {bits}-bit)",
                 hints={float(r): h for r, h in hints.items()}, rtol=1e-6)


# --- Q6: FP8 E4M3 scales -------------------------------------------------------------------------

def _keys(seed, shape, channel, factor):
    """The case's keys, built as the test cell's ``_call`` builds them: seeded normals, one channel scaled."""
    keys = np.random.default_rng(seed).standard_normal(shape)
    keys[..., channel] *= factor
    return keys


def _worst(keys, values):
    """Largest absolute difference between the keys and what a reader gets back."""
    return float(np.abs(values - keys).max())


def _e4m3_error(keys, axis):
    """Largest error of mha_kit's E4M3 round trip with one scale per ``axis`` group (mk.SCALE_AXES)."""
    return _worst(keys, mk.quantize_e4m3(keys, axis)[0])


def _scaled(keys, scale, rounding=None):
    """What a reader gets back of ``keys`` stored as ``keys / scale`` rounded by ``rounding`` (E4M3's by default)."""
    with np.errstate(all="ignore"):  # a slip's scale may hold a zero (a token whose numbers are all negative)
        rounded = rounding(keys / scale) if rounding else mk.round_minifloat(keys / scale, "e4m3")
    return rounded * scale


def _slip_errors(keys, scale):
    """``[(largest error, hint)]`` of the slips that keep the right scale ``scale`` (per tensor or per token)."""
    back = _scaled(keys, scale)
    with np.errstate(all="ignore"):
        relative = float((np.abs(back - keys) / np.abs(keys)).max())
    return [(_worst(keys, _scaled(keys, scale, np.round)),
             'rounded to integers: E4M3\'s grid is mk.round_minifloat(v, "e4m3")'),
            (relative, "the absolute error |read back - x|, in x's units, not relative to x")]


def _finite(slips):
    return [(value, hint) for value, hint in slips if math.isfinite(value)]


def _close(rtol):
    return lambda a, b: math.isclose(a, b, rel_tol=rtol)


def _unrounded(got, expected, what):
    """A largest error far below E4M3's is an error of numbers never rounded to it."""
    if isinstance(got, float) and 0 <= got < 1e-6 * expected:
        raise AssertionError(f"{what}: expected {expected:.6g}, got {got:.3g}: the numbers were never rounded to E4M3 "
                             "(mk.round_minifloat)")


def _describe_fp8(seed, shape, channel, factor):
    return f"keys {tuple(shape)}, seed {seed}, channel {channel} x{factor:g}"


#: The hint of a token scale taken across the heads (pooled, or a max over axis 0): its group is the last axis.
_OWN_HEAD = "a token's scale: its own d_h numbers in its own head (the last axis)"


@question("fp8_scales", _describe_fp8)
def _fp8_scales(got, seed, shape, channel, factor):
    keys, case = _keys(seed, shape, channel, factor), _describe_fp8(seed, shape, channel, factor)
    if type(got) is not tuple or len(got) != 4:
        raise AssertionError("expected (tensor_scale, tensor_error, token_error, scale_bytes) as a tuple of 4, "
                             f"got {type(got).__name__}")
    got = [item.item() if isinstance(item, np.ndarray) and item.size == 1 else item for item in got]
    h_kv, s, d_h = shape
    if isinstance(got[0], np.ndarray):
        kinds = dict(merge_slips([(d_h, "taken per channel"), (h_kv * d_h, "taken per channel"),
                                  (h_kv * s, "taken per token")]))
        kind = f": {kinds[got[0].size]}" if got[0].size in kinds else ""
        raise AssertionError(f"per-tensor scale ({case}): expected one number for all of x, got {got[0].size}{kind}")
    _, scale = mk.quantize_e4m3(keys, "tensor")
    amax = float(np.abs(keys).max())
    # rtol 1e-6: a scale computed in float32, as vLLM's quantiser computes it, is right
    expect_float(got[0], scale.item(), f"per-tensor scale ({case})", rtol=1e-6, wrong=merge_slips([
        (amax / 240, "240 ends float8_e4m3fnuz (MI300-class GPUs): OCP E4M3's largest number is 448"),
        (amax / 224, "224 is vLLM's bound for e4m3fnuz on ROCm: OCP E4M3's largest number is 448"),
        (amax / 57344, "57,344 is E5M2's largest number: E4M3's is 448"),
        (amax / 127, "127 is int8's range: E4M3's largest number is 448"),
        (448 / amax, "the scale maps amax onto 448: amax / 448, not its inverse"),
        (amax, "the scale divides amax by E4M3's largest number"),
        (float(keys.max()) / 448, "amax is the largest magnitude: np.abs(x).max(), not x.max()")], _close(1e-6)))
    values, _ = mk.quantize_e4m3(keys, "tensor")
    tensor_error, what = _worst(keys, values), f"largest error per tensor ({case})"
    _unrounded(got[1], tensor_error, what)
    expect_float(got[1], tensor_error, what, rtol=1e-6, wrong=merge_slips(_finite([
        (tensor_error / scale.item(), "the error is in x's units: multiply the rounded numbers back by the scale"),
        (float(np.abs(values - keys).mean()), "the largest error, not the mean"),
        *_slip_errors(keys, scale)]), _close(1e-6)))
    token_error, what = _e4m3_error(keys, "token"), f"largest error per token ({case})"
    _unrounded(got[2], token_error, what)
    heads = np.moveaxis(keys, 1, 0)  # (s, h_kv, d_h): a token's numbers in every head, one group
    token_scale = mk.quantize_e4m3(keys, "token")[1]
    expect_float(got[2], token_error, what, rtol=1e-6, wrong=merge_slips(_finite([
        (_e4m3_error(keys, "channel"), "per channel, not per token (the last axis)"),
        (_worst(heads, mk.quantize_e4m3(heads, "head")[0]), _OWN_HEAD),  # pooled over the heads
        (_worst(keys, _scaled(keys, np.abs(keys).max(axis=0, keepdims=True) / 448)), _OWN_HEAD),  # max over axis 0
        (_e4m3_error(keys, "head"), "per head, not per token"),
        (tensor_error, "that is the per-tensor error: divide each token by its own scale"),
        (_worst(keys, _scaled(keys, keys.max(axis=-1, keepdims=True) / 448)),
         "amax is the largest magnitude: np.abs(x).max(...), not x.max(...)"),
        (float(np.abs(_scaled(keys, token_scale) - keys).mean()), "the largest error, not the mean"),
        *_slip_errors(keys, token_scale)]), _close(1e-6)))
    count = mk.kv_scale_count(keys.shape, "token")
    expect_int(got[3], 4 * count, f"bytes of the per-token scales ({case})", wrong=dict(merge_slips([
        (2 * count, "a scale is an fp32 number: 4 bytes"), (count, "bytes, not scales: 4 bytes each"),
        (4 * s, "one scale per token and head: h_kv * s of them"), (4 * h_kv * d_h, "one scale per token, not per channel"),
        (4, "the per-token scales' bytes, not the per-tensor scale's")])))


# --- Q7: chunked prefill -------------------------------------------------------------------------

def _chunked(prompt_tokens, decoding, token_budget, step, chunked=True):
    """(TTFT, worst gap of the running decodes) from mk.simulate_batching, under the step time ``step``.

    ``decoding`` requests with one-token prompts run their first step together; the prompt arrives as
    it ends, so every later step holds their decodes (they outlast the prompt) and its chunks.
    """
    arrival = step(decoding, 0, 0)
    outlast = prompt_tokens // max(token_budget - decoding, 1) + 3  # tokens: more than the prompt has steps
    requests = [(0.0, 1, outlast)] * decoding + [(arrival, prompt_tokens, 1)]
    latencies = mk.simulate_batching(requests, step, token_budget, chunked_prefill=chunked)
    return latencies[-1].ttft, mk.summarize_latencies(latencies).worst_itl


def _describe_chunked(prompt_tokens, decoding, token_budget, weights_s, token_s):
    return (f"{prompt_tokens:,} prompt tokens, {decoding} decodes, budget {token_budget:,}, "
            f"{weights_s * 1e3:g} ms, {token_s * 1e6:g} us")


def _step_times(prompt_tokens, decoding, token_budget, step):
    """Seconds of each step that computes a chunk of the prompt: the chunks fill the room the decodes leave."""
    room = token_budget - decoding
    chunks = [room] * (prompt_tokens // room) + ([prompt_tokens % room] if prompt_tokens % room else [])
    return [step(chunk, decoding) for chunk in chunks]


@question("chunked_prefill", _describe_chunked)
def _chunked_prefill(got, prompt_tokens, decoding, token_budget, weights_s, token_s):
    def roofline(prefill, decode, cached):  # the question's step: the weights' read or the tokens' compute
        return max(weights_s, (prefill + decode) * token_s)

    case = _describe_chunked(prompt_tokens, decoding, token_budget, weights_s, token_s)
    if type(got) is not tuple or len(got) != 2:
        raise AssertionError(f"expected (ttft_s, worst_itl_s) as a tuple of 2 floats, got {type(got).__name__}")
    ttft, worst = _chunked(prompt_tokens, decoding, token_budget, roofline)
    steps = _step_times(prompt_tokens, decoding, token_budget, lambda p, d: roofline(p, d, 0))
    decode_only = roofline(0, decoding, 0)  # a step that holds the decodes and no chunk
    full = roofline(token_budget - decoding, decoding, 0)
    slips = [(_chunked(prompt_tokens, decoding, token_budget + decoding, roofline),
              "the decodes take their tokens first: a chunk gets token_budget - decoding"),
             (_chunked(prompt_tokens, decoding, token_budget, lambda p, d, c: max(weights_s, p * token_s)),
              "a step also computes one token of each running decode"),
             (_chunked(prompt_tokens, decoding, token_budget, lambda p, d, c: weights_s + (p + d) * token_s),
              "the step takes the longer of the two times, not their sum"),
             (_chunked(prompt_tokens, decoding, token_budget, lambda p, d, c: (p + d) * token_s),
              "a step below the knee still reads every weight: weights_s at least"),
             (_chunked(prompt_tokens, decoding, prompt_tokens + decoding, roofline, chunked=False),
              "chunked prefill cuts the prompt to the budget left, not one whole step")]
    ttft_slips = [(value[0], hint) for value, hint in slips] + [
        (ttft + decode_only, "one step too many: the first token ends the last chunk's step"),
        (ttft - steps[-1], "one step short: the last, partial chunk needs a step too"),
        (len(steps) * full, "the last chunk holds only the rest of the prompt")]
    close = _close(1e-6)
    expect_float(got[0], ttft, f"TTFT ({case})", rtol=1e-6, wrong=merge_slips(ttft_slips, close))
    # the TTFT is right, so the steps are: only the slips whose steps give that TTFT can explain the gap
    worst_slips = [(ttft, "a decode waits one step for its next token, not the whole prefill"),
                   (worst + decode_only, "a decode's gap is one step, the chunk's: its token ends that step"),
                   (decode_only, "the worst gap is a step that also holds a chunk, not a decode-only step"),
                   *((value[1], hint) for value, hint in slips if close(value[0], ttft))]
    expect_float(got[1], worst, f"worst ITL ({case})", rtol=1e-6, wrong=merge_slips(worst_slips, close))
