"""Questions of assignments 07-10 (the chapters "What interviewers ask next"), registered into
:data:`mha_course.judge.questions.QUESTIONS` when that module loads.

Same conventions as :mod:`mha_course.judge.questions`: ``check(got, *case)`` raises
``AssertionError`` with a one-line reason, the reference comes from ``mha_kit``, and the inputs a
case stands for are rebuilt here exactly as the test cell's ``_call`` builds them in the kernel
(the ``*_inputs`` functions below; the notebooks' test cells repeat their two or three lines).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

import mha_kit as mk

from ..expect import expect_close, expect_equal, expect_float, expect_int
from .cases import config
from .questions import _name, question

_BITS = {8: "bits, not bytes: divide by 8"}
_ROUND_UP = "round up to a whole byte: a partly used byte is still stored"


def _expect_tuple(got, size, what):
    if type(got) is not tuple or len(got) != size:
        raise AssertionError(f"expected {what} as a tuple of {size} arrays, got {type(got).__name__}")


# ---- 07_flash_attention ----------------------------------------------------------------------

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
    _expect_state(got, _state_of(scores, v), f"the state of one block (n={n}, b={b}, scores x{scale})",
                  wrong={"l and acc must use exp(score - m), shifted by the row maximum": unshifted})


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


def _merged(a, b, flip=1.0):
    m = np.maximum(a[0], b[0])
    alpha, beta = np.exp(flip * (a[0] - m)), np.exp(flip * (b[0] - m))
    return m, alpha * a[1] + beta * b[1], alpha[:, None] * a[2] + beta[:, None] * b[2]


@question("merge_states", lambda n, d_v, seed, empty_row: f"merged state (n={n}, d_v={d_v}, empty row={empty_row})")
def _merge_states(got, n, d_v, seed, empty_row):
    a, b = state_inputs(n, d_v, seed, empty_row)
    summed = (np.maximum(a[0], b[0]), a[1] + b[1], a[2] + b[2])
    with np.errstate(over="ignore", invalid="ignore"):
        wrong = {"rescale each state's l and acc by exp(m_old - m_new) before adding them": summed,
                 "the factor is exp(m_old - m_new), at most 1, not exp(m_new - m_old)": _merged(a, b, flip=-1.0)}
    _expect_state(got, _merged(a, b), f"the merged state (n={n}, d_v={d_v}, empty row={empty_row})", wrong=wrong)


def qkv_inputs(n, s, d_h, seed):
    """``(q, k, v)`` of shapes ``(n, d_h)``, ``(s, d_h)``, ``(s, d_h)`` from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d_h)), rng.standard_normal((s, d_h)), rng.standard_normal((s, d_h))


@question("blockwise_attention", lambda n, s, d_h, block, seed: f"blockwise attention (n={n}, s={s}, block_size={block})")
def _blockwise(got, n, s, d_h, block, seed):
    q, k, v = qkv_inputs(n, s, d_h, seed)
    what = f"blockwise attention (n={n}, s={s}, d_h={d_h}, block_size={block})"
    whole = s - s % block
    wrong = {"looks like the 1/sqrt(d_h) scale is missing": mk.softmax(q @ k.T) @ v}
    if 0 < whole < s:
        wrong["the last, shorter block of keys was left out"] = mk.scaled_dot_product_attention(q, k[:whole], v[:whole])[0]
    expect_close(got, mk.flash_attention(q, k, v, block_size=block), what, wrong=wrong)


@question("score_bytes_saved", lambda spec, n, bits: f"score-matrix bytes of {_name(spec)} (n={n}, {bits}-bit)")
def _score_bytes(got, spec, n, bits):
    cfg = config(spec)
    expected = mk.score_matrix_bytes(cfg, n, bits)
    floor = cfg.num_heads * n * n * bits // 8
    wrong = {floor: _ROUND_UP} if floor != expected else {}
    expect_int(got, expected, f"bytes of the score matrix of one {_name(spec)} layer (n={n}, {bits}-bit)", wrong=wrong,
               hints={**_BITS, Fraction(1, cfg.num_heads): "that is one head: every head has its own n x n scores"})


# ---- 08_rope ---------------------------------------------------------------------------------

def rope_inputs(n, r, seed):
    """An ``(n, r)`` array of vectors from ``seed``."""
    return np.random.default_rng(seed).standard_normal((n, r))


def _rope_mistakes(x, positions):
    """Outputs of the classic RoPE mistakes, to name the one made."""
    r = x.shape[-1]
    pos = np.asarray(positions)[:, None]
    angle = pos * 10000.0 ** (-np.arange(r // 2) * 2.0 / r)
    cos, sin = np.cos(angle), np.sin(angle)
    pairs = np.empty_like(x)  # neighbouring dimensions 2i, 2i + 1 rotated together
    pairs[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    pairs[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return {"this rotates neighbouring dimensions (2i, 2i+1): here dimension i pairs with i + r/2": pairs,
            "the rotation goes the wrong way: x1 cos - x2 sin, then x1 sin + x2 cos": mk.rope(x, -np.asarray(positions)),
            "frequencies are base ** (-2i / r), not base ** (-i / r)":
                mk.rope(x, np.asarray(positions)) if r == 2 else _slow_rope(x, positions)}


def _slow_rope(x, positions):
    r = x.shape[-1]
    angle = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(r // 2) * 1.0 / r)
    x1, x2 = x[:, : r // 2], x[:, r // 2:]
    return np.concatenate([x1 * np.cos(angle) - x2 * np.sin(angle), x1 * np.sin(angle) + x2 * np.cos(angle)], axis=-1)


@question("rope", lambda n, r, seed, positions: f"rope of a ({n}, {r}) array at positions {positions}")
def _rope(got, n, r, seed, positions):
    x = rope_inputs(n, r, seed)
    expect_close(got, mk.rope(x, positions), f"rope of a ({n}, {r}) array at positions {positions}",
                 wrong=_rope_mistakes(x, positions))


def pair_inputs(r, seed):
    """One query vector and one key vector of size ``r`` from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(r), rng.standard_normal(r)


@question("rope_score", lambda r, seed, m, p: f"score of a query at {m} and a key at {p} (r={r})")
def _rope_score(got, r, seed, m, p):
    q, k = pair_inputs(r, seed)
    expected = float(mk.rope_scores(q, k, [m], [p])[0, 0])
    if type(got) is float and not np.isclose(got, expected) and np.isclose(got, float(mk.rope_scores(q, k, [p], [m])[0, 0])):
        raise AssertionError(f"score at positions ({m}, {p}) is the one for ({p}, {m}): rotate q by m and k by p")
    if type(got) is float and not np.isclose(got, expected) and np.isclose(got, float(q @ k)):
        raise AssertionError(f"score at positions ({m}, {p}) is the plain q . k: rotate both vectors first")
    expect_float(got, expected, f"score of a query at position {m} and a key at position {p} (r={r})", rtol=1e-7)


@question("scores_at_distance", lambda r, seed, distance, starts: f"scores at distance {distance} from starts {starts}")
def _scores_at_distance(got, r, seed, distance, starts):
    q, k = pair_inputs(r, seed)
    starts = np.asarray(starts)
    expected = mk.rope_scores(q, k, starts + distance, starts).diagonal()  # query at t + distance, key at t
    if np.ptp(expected) > 1e-8 * (1 + np.abs(expected).max()):  # the property itself: one value for every start
        raise AssertionError("course bug: RoPE scores at one distance differ")  # pragma: no cover
    wrong = {"the query goes at start + distance and the key at start (not the reverse)":
             mk.rope_scores(q, k, starts, starts + distance).diagonal()}
    expect_close(got, expected, f"scores at distance {distance} for starts {starts.tolist()}", wrong=wrong)


def rotary_inputs(h, n, d_h, seed):
    """``(q, k, v)`` of shape ``(h, n, d_h)`` each from ``seed``."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((h, n, d_h)) for _ in range(3))


@question("rope_attention", lambda h, n, d_h, seed, start: f"causal RoPE attention (h={h}, n={n}, first position {start})")
def _rope_attention(got, h, n, d_h, seed, start):
    q, k, v = rotary_inputs(h, n, d_h, seed)
    positions = np.arange(start, start + n)
    mask = mk.causal_mask(n)
    wrong = {"the values were rotated too: RoPE rotates queries and keys only":
             mk.scaled_dot_product_attention(mk.rope(q, positions), mk.rope(k, positions), mk.rope(v, positions), mask)[0],
             "the keys must be rotated too, by their own positions":
             mk.scaled_dot_product_attention(mk.rope(q, positions), k, v, mask)[0],
             "no causal mask: token i may see tokens 0..i only": mk.rotary_attention(q, k, v, positions)[0]}
    expect_close(got, mk.rotary_attention(q, k, v, positions, mask=mask)[0],
                 f"causal RoPE attention (h={h}, n={n}, d_h={d_h}, positions {start}..{start + n - 1})", wrong=wrong)


# ---- 09_masks --------------------------------------------------------------------------------

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
    masked = {}
    masks = [np.tril(np.ones((n, s), dtype=bool))] + ([mk.causal_mask(n, s)] if s >= n else [])
    for mask in masks:
        if mask.any(axis=1).all():
            masked["cross-attention has no causal mask: every query sees every context token"] = \
                mk.multi_head_attention(x, w_q, w_k, w_v, w_o, h, context=context, mask=mask)[0]
    expect_close(got, mk.multi_head_attention(x, w_q, w_k, w_v, w_o, h, context=context)[0],
                 f"cross-attention output (n={n}, s={s}, d={d}, d_context={d_ctx}, h={h})", wrong=masked)


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
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    _expect_mask(got, mk.sliding_window_mask(n, w), f"sliding-window mask (n={n}, window={w})", wrong={
        "each query sees itself and the window - 1 keys before it, window keys in all": (j <= i) & (j >= i - w),
        "the window is causal too: no key after the query": np.abs(i - j) < w})


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


# ---- 10_serving ------------------------------------------------------------------------------

def _expect_int_list(got, expected, what, wrong):
    if type(got) is not list:
        raise AssertionError(f"expected {what} as a list of ints, got {type(got).__name__}")
    if len(got) != len(expected):
        raise AssertionError(f"{what}: expected {len(expected)} numbers (one per request), got {len(got)}")
    for item in got:
        if type(item) is not int:
            raise AssertionError(f"{what}: expected plain ints, got {type(item).__name__} ({item!r}): use // or int(...)")
    if got != expected and got == wrong[0]:
        raise AssertionError(f"{what}: expected {expected}, got {got}: {wrong[1]}")
    if got != expected:
        raise AssertionError(f"{what}: expected {expected}, got {got}")


@question("blocks_per_request", lambda lengths, size: f"blocks per request (lengths={lengths}, block_size={size})")
def _blocks(got, lengths, size):
    expected = [mk.cache_slots([n], n, size).paged // size for n in lengths]
    _expect_int_list(got, expected, f"blocks per request (lengths={lengths}, block_size={size})",
                     ([n // size for n in lengths], "a partly filled last block is still a whole block: round up"))


@question("paged_bytes_saved", lambda lengths, max_len, size, per_token:
          f"bytes saved by paging (lengths={lengths}, max_len={max_len}, block_size={size})")
def _paged_saved(got, lengths, max_len, size, per_token):
    slots = mk.cache_slots(lengths, max_len, size)
    expect_int(got, (slots.reserved - slots.paged) * per_token,
               f"bytes saved by paging (lengths={lengths}, max_len={max_len}, block_size={size}, {per_token} B/token)",
               wrong={(slots.reserved - slots.used) * per_token:
                      "paging still holds whole blocks: the unused slots of each last block are not saved",
                      slots.reserved - slots.paged: "that counts token slots: multiply by the bytes per token"})


@question("rolling_cache_bytes", lambda spec, t, window, bits: f"rolling cache of {_name(spec)} (t={t}, window={window}, {bits}-bit)")
def _rolling(got, spec, t, window, bits):
    cfg = config(spec)
    held = min(t, window)
    expected = mk.kv_cache_bytes(cfg, held, 1, bits)
    wrong = {mk.kv_cache_bytes(cfg, t, 1, bits): "a rolling cache keeps only the last window tokens"} if t > window else {}
    if t < window:
        wrong[mk.kv_cache_bytes(cfg, window, 1, bits)] = "before window tokens have been seen, only t tokens are held"
    floor = cfg.num_layers * mk.kv_elements_per_token(cfg) * held * bits // 8
    if floor != expected:
        wrong[floor] = _ROUND_UP
    expect_int(got, expected, f"bytes held by a rolling cache of {_name(spec)} (t={t}, window={window}, {bits}-bit)",
               wrong=wrong, hints={**_BITS, Fraction(1, 2): "did you forget K or V?",
                                   Fraction(1, cfg.num_layers): "that is one layer: multiply by num_layers"})


@question("int8_cache_bytes", lambda spec, t, scale_bits: f"8-bit cache of {_name(spec)} (t={t}, {scale_bits}-bit scales)")
def _int8(got, spec, t, scale_bits):
    cfg = config(spec)
    elements = cfg.num_layers * mk.kv_elements_per_token(cfg) * t
    scales = cfg.num_layers * 2 * cfg.num_kv_heads  # one per key-value head, for K and for V, per layer
    expected = mk.quantized_cache_bytes(elements, scales, scale_bits)
    wrong = {elements: "the scales are stored too: one per key-value head, for K and V, in every layer",
             mk.quantized_cache_bytes(elements, scales * t, scale_bits): "one scale per head, not one per head and token",
             mk.quantized_cache_bytes(elements, cfg.num_layers * cfg.num_kv_heads, scale_bits):
                 "keys and values have their own scales: 2 per key-value head and layer"}
    if cfg.num_heads != cfg.num_kv_heads:
        wrong[mk.quantized_cache_bytes(elements, cfg.num_layers * 2 * cfg.num_heads, scale_bits)] = \
            "scales belong to the key-value heads (h_kv), not the query heads"
    expect_int(got, expected, f"bytes of an 8-bit cache of {_name(spec)} (t={t}, {scale_bits}-bit scales)",
               wrong=wrong, hints={2: "8-bit: one byte per number, not two"})
