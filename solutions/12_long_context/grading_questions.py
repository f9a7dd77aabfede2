"""The judge's questions of 12_long_context: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

import mha_kit as mk

from mha_course.kernel.cases import config
from mha_course.judge.expect import count_value, expect_close, expect_float, expect_int
from mha_course.judge.questions import spec_name as _name
from mha_course.judge.questions import expect_tuple as _expect_tuple
from mha_course.judge.questions import question
from mha_course.judge import diagnoses


def _bands_moved(head_dim, base, scaling, by):
    """``llama3`` with its cut-offs met ``by`` times sooner: a wavelength taken ``by`` times too short."""
    moved = {**scaling, "low_freq_factor": scaling["low_freq_factor"] / by,
             "high_freq_factor": scaling["high_freq_factor"] / by}
    return mk.rope_inv_freq(head_dim, base, moved)[0]


@question("llama3_inv_freq", lambda r, base, scaling: f"llama3 inv_freq (head_dim={r}, base={base:g})")
def _llama3(got, head_dim, base, scaling):
    expected, _ = mk.rope_inv_freq(head_dim, base, scaling)
    theta, _ = mk.rope_inv_freq(head_dim, base)  # unscaled
    factor = scaling["factor"]
    wrong = {"every pair was divided by the factor: llama3 keeps short wavelengths as trained": theta / factor,
             "no pair was scaled: compare each pair's wavelength (tokens per turn) with the cut-offs": theta,
             # each pair's kept and divided shares swapped: the two add up to theta + theta / factor
             "the blend is reversed: shorter wavelengths keep more of the unscaled frequency":
                 theta + theta / factor - expected,
             "the bands are off: a wavelength is the tokens one full turn (2 pi) takes":
                 _bands_moved(head_dim, base, scaling, 2 * np.pi),
             "the cut-offs use L, the trained context, not L * factor":
                 _bands_moved(head_dim, base, scaling, factor),
             # the divided share multiplied instead: theta + (theta - expected) * factor
             "the slow pairs were multiplied by the factor: dividing is what slows them":
                 theta + (theta - expected) * factor,
             # base^(-i/r) is the square root of the base to the power -2i/r
             "theta_i = base^(-2i/r): pair i covers dimensions 2i and 2i + 1":
                 mk.rope_inv_freq(head_dim, float(base) ** 0.5, scaling)[0]}
    what = f"llama3 inv_freq (head_dim={head_dim}, base={base:g})"
    try:
        expect_close(got, expected, what, wrong=wrong, atol=0.0)
    except AssertionError as error:
        if "largest difference" not in str(error):
            raise
        _worst_pair(got, expected, what)


def _worst_pair(got, expected, what):
    """Name the pair whose frequency is the most off, relatively: they run from 1 down to about 1e-7."""
    ratio = np.asarray(got, dtype=float) / expected
    i = int(np.argmax(np.abs(np.log(np.abs(ratio) + 1e-300))))  # the worst factor, too large or too small
    off = f"{ratio[i]:.3g}x the expected value" if ratio[i] > 0 else "of the wrong sign"
    raise AssertionError(f"{what}: pair i = {i} is {off} (expected {expected[i]:.4g}, got {got[i]:.4g}); "
                         f"{int(np.sum(~np.isclose(got, expected, rtol=1e-6, atol=0.0)))} of {expected.size} pairs are off")


def _expect_positions(got, expected, what, wrong):
    """``got`` is ``expected``, a list of plain ints; ``wrong`` is ``[(list, message)]`` of known slips."""
    if type(got) is not list:
        raise AssertionError(f"expected {what} as a list of ints, got {type(got).__name__}"
                             + (": use .tolist()" if type(got) is np.ndarray else ""))
    bad = [item for item in got if count_value(item) is None]
    if bad:
        raise AssertionError(f"{what}: expected plain ints, got {type(bad[0]).__name__} ({bad[0]!r}): use int(...)")
    got = [count_value(item) for item in got]  # numpy ints are positions too (small: none overflows)
    if got == expected:
        return
    for slip, message in wrong:
        if got == slip:
            raise AssertionError(f"{what}: {message}")
    if len(set(got)) < len(got) or any(p < 0 for p in got):
        raise AssertionError(f"{what}: a position is negative or kept twice: nothing is evicted before the cache is full")
    if len(got) != len(expected):
        raise AssertionError(f"{what}: expected {len(expected)} positions, got {len(got)}")
    index = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
    raise AssertionError(f"{what}: item {index + 1} of {len(expected)} should be position {expected[index]}, got {got[index]}")


@question("sink_positions", lambda n_sink, window, t: f"sink cache (n_sink={n_sink}, window={window}, t={t})")
def _sink_positions(got, n_sink, window, num_tokens):
    cache = mk.SinkCache(n_sink, window)
    empty = np.zeros((1, num_tokens, 1))  # (h_kv, t, d_h): only the positions matter
    cache.append(empty, empty)
    expected = cache.positions.tolist()
    sinks = expected[:min(num_tokens, n_sink)]  # the sinks come first in what the cache keeps
    wrong = [(list(range(max(num_tokens - window, 0), num_tokens)),
              "the first n_sink tokens are the sinks: they are never evicted"),
             (sinks + list(range(max(num_tokens - window - 1, n_sink), num_tokens)),
              "one position too many: the last window tokens include the newest one"),
             (sinks + list(range(max(num_tokens - window + 1, n_sink), num_tokens)),
              "one position too few: the last window tokens include the newest one"),
             (sinks + list(range(max(num_tokens - window - 1, n_sink), num_tokens - 1)),
              f"the newest token, position {num_tokens - 1}, is left out: the window ends with it")]
    _expect_positions(got, expected, f"positions kept (n_sink={n_sink}, window={window}, t={num_tokens})",
                      [(slip, message) for slip, message in wrong if slip != expected])


def split_inputs(num_splits, n, d_v, seed, offset, spread):
    """``(outs, lses)`` of a split decode step: ``(num_splits, n, d_v)`` outputs, ``(num_splits, n)`` log-sum-exps.

    ``offset`` is a number, or a list of one per query row (rows near +1,000 and near -1,000).
    """
    rng = np.random.default_rng(seed)
    outs = rng.standard_normal((num_splits, n, d_v))
    return outs, offset + spread * rng.standard_normal((num_splits, n))


def _near(offset):
    return f"{offset:g}" if type(offset) is not list else "/".join(f"{x:g}" for x in offset) + " by row"


def _one_maximum(outs, lses):
    """The merge shifted by ONE maximum over every row: rows far below it underflow to 0/0."""
    with np.errstate(all="ignore"):
        weights = np.exp(lses - lses.max())
        total = np.add.reduce(weights)  # over the splits
        return (weights[..., None] * outs).sum(axis=0) / total[:, None], lses.max() + np.log(total)


def _merged(outs, lses):
    """``(out, lse)`` by ``mha_kit``'s one merge: a split's ``(o_i, L_i)`` is the state ``(L_i, 1, o_i)``."""
    state = (lses[0], np.ones_like(lses[0]), outs[0])
    for out, lse in zip(outs[1:], lses[1:]):
        state = mk.merge_softmax_states(state, (lse, np.ones_like(lse), out))
    m, denom, acc = state
    return acc / denom[:, None], m + np.log(denom)


@question("merge_splits", lambda s, n, d_v, seed, offset, spread: f"merge ({s} splits, n={n}, L near {_near(offset)})")
def _merge_splits(got, num_splits, n, d_v, seed, offset, spread):
    outs, lses = split_inputs(num_splits, n, d_v, seed, offset, spread)
    out, lse = _merged(outs, lses)
    what = f"({num_splits} splits, n={n}, L near {_near(offset)})"
    _expect_tuple(got, 2, f"the merge {what}")
    one_max = _one_maximum(outs, lses)
    if (type(got[0]) is np.ndarray and got[0].shape == out.shape and not np.all(np.isfinite(got[0]))
            and not np.all(np.isfinite(one_max[0])) and np.allclose(got[0], one_max[0], equal_nan=True)):
        raise AssertionError(f"the merge {what}: one maximum over all rows underflows the rows far below it: "
                             "shift each row by its own largest L_i")
    diagnoses.check(got, (out, lse), f"the merge {what}", {}, "no_max_shift")
    shares = np.exp(lses - lses.max(axis=0))  # (num_splits, n), each split's weight up to a common factor
    expect_close(got[0], out, f"merged output {what}",
                 wrong={"the splits are weighted equally: each counts by its share of the softmax denominator":
                        outs.mean(axis=0),
                        "the weights of the splits do not sum to 1 in every row": (shares[..., None] * outs).sum(axis=0)})
    expect_close(got[1], lse, f"merged log-sum-exp {what}", atol=1e-10, rtol=1e-10,
                 wrong={"that is the largest L_i: every split adds to the denominator": lses.max(axis=0),
                        "log-sum-exps do not add up: the denominators do": lses.sum(axis=0),
                        "add the largest L_i back: the shares were taken relative to it": lse - lses.max(axis=0)})


@question("soft_cap", lambda model, field, scores: f"soft cap ({model} {field}, scores of shape {np.shape(scores)})")
def _soft_cap(got, model, field, scores):
    cap = getattr(mk.MODEL_FACTS[model], field)
    x = np.array(scores, dtype=float)
    wrong = {"that is a hard clip: a soft cap bends smoothly, so scores below the cap move too": np.clip(x, -cap, cap),
             "small scores must stay almost unchanged: the slope at 0 is 1": cap * np.tanh(x),
             "the curve must reach the cap, not 1": np.tanh(x / cap)}
    expect_close(got, mk.soft_cap(x, cap), f"soft-capped scores (cap {cap:g}, shape {x.shape})", wrong=wrong,
                 nonfinite="did exp() overflow on a large score? np.tanh never does")


# --- Q5: local and global layers -------------------------------------------------------------------

def _per_layer_token(cfg):
    """bf16 bytes one layer caches per token: K and V of every key-value head."""
    return mk.kv_cache_bytes_per_token(cfg, "bf16") // cfg.num_layers


def _describe_layout(spec, s, local_per_global, window):
    return f"cache of {_name(spec)}, {s:,} tokens, {local_per_global} local per global, window {window:,}"


@question("local_global_bytes", _describe_layout)
def _local_global(got, spec, context_len, local_per_global, window):
    cfg = config(spec)
    layout = mk.LayerLayout(name="case", title="case", local_per_global=local_per_global, window=window,
                            cite="case", source="the test's case")
    expected = mk.layout_kv_bytes(cfg, context_len, layout)
    what = _describe_layout(spec, context_len, local_per_global, window)
    per, layers, s = _per_layer_token(cfg), cfg.num_layers, context_len

    def held(n_global, local_tokens):
        return per * (n_global * s + (layers - n_global) * local_tokens)

    wrong = {}  # the first slip that gives a value names it
    for value, hint in ((per * layers * s, "a local layer caches at most its window"),
                        (held(layers // local_per_global, min(s, window)),
                         "one global layer in each group of local_per_global + 1 layers"),
                        (held(-(-layers // (local_per_global + 1)), min(s, window)),
                         "a stack need not end on a global layer: count whole groups"),
                        (held(layers // (local_per_global + 1), window),
                         "a local layer holds only the tokens seen while the text is shorter than its window")):
        if value != expected:
            wrong.setdefault(value, hint)
    diagnoses.check(got, expected, what, {"h": cfg.num_heads, "h_kv": cfg.num_kv_heads, "k_or_v": [expected // 2]},
                    "h_vs_h_kv", "k_and_v")
    expect_int(got, expected, what, hints={Fraction(1, layers): "one layer's worth: count every layer",
                                           2: "bf16 is 2 bytes a number, not 4"} if layers > 1 else None, wrong=wrong)


# --- Q6: a sink cache's bytes ----------------------------------------------------------------------

@question("sink_cache_bytes", lambda spec, t, n_sink, window:
          f"sink cache of {_name(spec)} after {t:,} tokens (n_sink={n_sink}, window={window:,})")
def _sink_bytes(got, spec, num_tokens, n_sink, window):
    cfg = config(spec)
    expected = mk.kv_cache_bytes(cfg, min(num_tokens, n_sink + window))
    what = f"sink cache of {_name(spec)} after {num_tokens:,} tokens (n_sink={n_sink}, window={window:,})"
    per_token = mk.kv_cache_bytes_per_token(cfg, "bf16")
    wrong = {}  # the first slip that gives a value names it
    for value, hint in ((per_token * min(num_tokens, window), "the n_sink sinks are kept too, besides the window"),
                        (per_token * (n_sink + window), "before the cache is full it holds only the tokens seen so far"),
                        (per_token * num_tokens, "a sink cache evicts: it holds n_sink + window tokens at most")):
        if value != expected:
            wrong.setdefault(value, hint)
    diagnoses.check(got, expected, what, {"h": cfg.num_heads, "h_kv": cfg.num_kv_heads, "k_or_v": [expected // 2]},
                    "h_vs_h_kv", "k_and_v")
    expect_int(got, expected, what, hints={Fraction(1, cfg.num_layers): "one layer's worth: count every layer"}
               if cfg.num_layers > 1 else None, wrong=wrong)


# --- Q7: llama3's bands, counted ---------------------------------------------------------------------

def _bands(head_dim, base, scaling, trained_times=1.0, radians=False):
    """``(kept, blended, divided)`` pair counts, with the cut-offs' context or the wavelength's unit off for slips."""
    theta = float(base) ** (-np.arange(0, head_dim, 2) / head_dim)  # not the solution's line: packed for the browser
    wavelength = (1.0 if radians else 2 * np.pi) / theta
    trained = scaling["original_max_position_embeddings"] * trained_times
    kept = int(np.sum(wavelength < trained / scaling["high_freq_factor"]))
    divided = int(np.sum(wavelength > trained / scaling["low_freq_factor"]))
    return kept, head_dim // 2 - kept - divided, divided


@question("llama3_bands", lambda r, base, scaling: f"llama3 bands (head_dim={r}, base={base:g}, factor {scaling['factor']:g})")
def _llama3_bands(got, head_dim, base, scaling):
    what = f"llama3 bands (head_dim={head_dim}, base={base:g}, factor {scaling['factor']:g})"
    counts = _bands(head_dim, base, scaling)
    scaled, _ = mk.rope_inv_freq(head_dim, base, scaling)
    theta, _ = mk.rope_inv_freq(head_dim, base)
    slowest = float(2 * np.pi / scaled.min())
    _expect_tuple_of(got, 4, f"{what} as (kept, blended, divided, slowest)")
    named = {_bands(head_dim, base, scaling, trained_times=scaling["factor"]):
             "the cut-offs use L, the trained context, not L * factor",
             _bands(head_dim, base, scaling, radians=True): "a wavelength is the tokens one full turn (2 pi) takes",
             tuple(2 * n for n in counts): "count pairs, not dimensions: a head of r dimensions has r/2 pairs"}
    named.pop(counts, None)  # a slip that gives the right counts here names nothing
    for index, name in enumerate(("kept", "blended", "divided")):
        if count_value(got[index]) is None:
            raise AssertionError(f"{what}: expected the pairs {name} as an int, got {type(got[index]).__name__}")
    got_counts = tuple(count_value(g) for g in got[:3])
    if got_counts != counts:
        hint = named.get(got_counts)
        message = f"{what}: expected (kept, blended, divided) = {counts}, got {got_counts}"
        raise AssertionError(f"{message}: {hint}" if hint else message)
    expect_float(got[3], slowest, f"{what}: slowest scaled wavelength",
                 hints={float(scaled.min() / theta.min()): "that is before scaling",
                        1 / (2 * np.pi): "a wavelength is the tokens one full turn (2 pi) takes"})


def _expect_tuple_of(got, size, what):
    if type(got) is not tuple or len(got) != size:
        raise AssertionError(f"expected {what}: a tuple of {size}, got {type(got).__name__}")
