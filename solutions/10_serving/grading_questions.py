"""The judge's questions of 10_serving: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

from fractions import Fraction


import mha_kit as mk

from mha_course.judge.expect import count_value, expect_int, overflow_message
from mha_course.kernel.cases import config
from mha_course.judge.questions import spec_name as _name, BITS_HINT as _BITS, ROUND_UP as _ROUND_UP, question
from mha_course.judge import diagnoses


def _expect_int_list(got, expected, what, context, *names):
    if type(got) is not list:
        raise AssertionError(f"expected {what} as a list of ints, got {type(got).__name__}")
    if len(got) != len(expected):
        raise AssertionError(f"{what}: expected {len(expected)} numbers (one per request), got {len(got)}")
    for item, want in zip(got, expected):
        if count_value(item) is None:
            raise AssertionError(f"{what}: expected plain ints, got {type(item).__name__} ({item!r}): use // or int(...)")
        if overflow_message(item, want, what):
            raise AssertionError(overflow_message(item, want, what))
    got = [count_value(item) for item in got]  # numpy ints are counts too
    diagnoses.check(got, expected, what, context, *names)
    if got != expected:
        raise AssertionError(f"{what}: expected {expected}, got {got}")


@question("blocks_per_request", lambda lengths, size: f"blocks per request (lengths={lengths}, block_size={size})")
def _blocks(got, lengths, size):
    expected = [mk.cache_slots([n], n, size).paged // size for n in lengths]
    _expect_int_list(got, expected, f"blocks per request (lengths={lengths}, block_size={size})",
                     {"floor": [[n // size for n in lengths]]}, "rounding")


@question("paged_bytes_saved", lambda lengths, max_len, size, per_token:
          f"bytes saved by paging (lengths={lengths}, max_len={max_len}, block_size={size})")
def _paged_saved(got, lengths, max_len, size, per_token):
    slots = mk.cache_slots(lengths, max_len, size)
    expected = (slots.reserved - slots.paged) * per_token
    what = f"bytes saved by paging ({lengths}, max_len={max_len}, blocks of {size}, {per_token} B/token)"
    diagnoses.known(got, expected, what, [
        ((slots.reserved - slots.used) * per_token, "paging still holds whole blocks: the last one's unused slots are not saved"),
        (slots.reserved - slots.paged, "that counts token slots: multiply by the bytes per token")])
    diagnoses.check(got, expected, what, {"in_blocks": [(slots.reserved - slots.paged // size) * per_token]},
                    "blocks_vs_slots")
    expect_int(got, expected, what)


@question("rolling_cache_bytes", lambda spec, t, window, bits: f"rolling cache of {_name(spec)} (t={t}, window={window}, {bits}-bit)")
def _rolling(got, spec, t, window, bits):
    cfg = config(spec)
    held = min(t, window)
    expected = mk.kv_cache_bytes(cfg, held, 1, bits)
    own = {mk.kv_cache_bytes(cfg, t, 1, bits): "a rolling cache keeps only the last window tokens"} if t > window else {}
    if t < window:
        own[mk.kv_cache_bytes(cfg, window, 1, bits)] = "before window tokens have been seen, only t tokens are held"
    wrong = {}
    in_bits = cfg.num_layers * mk.kv_elements_per_token(cfg) * held * bits
    floor = in_bits // 8
    if floor != expected:
        wrong[floor] = _ROUND_UP
    what = f"bytes held by a rolling cache of {_name(spec)} (t={t}, window={window}, {bits}-bit)"
    diagnoses.known(got, expected, what, own.items())
    context = {"in_bits": [in_bits], "floor": [floor] if floor != expected else [], "k_or_v": [-(-(in_bits // 2) // 8)],
               "h": cfg.num_heads, "h_kv": cfg.num_kv_heads}
    diagnoses.check(got, expected, what, context, "bits_vs_bytes", "rounding", "k_and_v", "h_vs_h_kv")
    expect_int(got, expected, what, wrong=wrong,
               hints={**_BITS, Fraction(1, cfg.num_layers): "that is one layer: multiply by num_layers"})


@question("int8_cache_bytes", lambda spec, t, scale_bits: f"8-bit cache of {_name(spec)} (t={t}, {scale_bits}-bit scales)")
def _int8(got, spec, t, scale_bits):
    cfg = config(spec)
    elements = cfg.num_layers * mk.kv_elements_per_token(cfg) * t
    # one scale per key-value head, for K and for V, per layer: the 2 h_kv d_h numbers of a layer over d_h
    scales = mk.kv_cache_bytes_per_token(cfg, 8) // cfg.head_dim
    expected = mk.quantized_cache_bytes(elements, scales, scale_bits)
    own = {elements: "the scales are stored too: one per key-value head, for K and V, in every layer",
           mk.quantized_cache_bytes(elements, scales * t, scale_bits): "one scale per head, not one per head and token"}
    what = f"bytes of an 8-bit cache of {_name(spec)} (t={t}, {scale_bits}-bit scales)"
    diagnoses.known(got, expected, what, own.items())
    floor = elements + scales * scale_bits // 8
    context = {"in_bits": [elements + scales * scale_bits], "floor": [floor] if floor != expected else [],
               "k_or_v": [mk.quantized_cache_bytes(elements, cfg.num_layers * cfg.num_kv_heads, scale_bits)],
               "with_h": [mk.quantized_cache_bytes(elements, cfg.num_layers * 2 * cfg.num_heads, scale_bits)]
               if cfg.num_heads != cfg.num_kv_heads else []}
    diagnoses.check(got, expected, what, context, "bits_vs_bytes", "rounding", "k_and_v", "h_vs_h_kv")
    expect_int(got, expected, what, hints={2: "8-bit: one byte per number, not two"})
