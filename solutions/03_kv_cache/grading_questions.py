"""The judge's questions of 03_kv_cache: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

from fractions import Fraction


import mha_kit as mk

from mha_course.judge.expect import expect_int
from mha_course.kernel.cases import config
from mha_course.judge.questions import spec_name as _name, BITS_HINT as _BITS, question
from mha_course.judge import diagnoses


@question("kv_bytes_read", lambda h_kv, d_h, s, bits: f"bytes read per token (h_kv={h_kv}, d_h={d_h}, s={s}, {bits}-bit)")
def _kv_bytes_read(got, h_kv, d_h, s, bits):
    cfg = mk.AttentionConfig(h_kv * d_h, h_kv, h_kv, d_h)
    expected = mk.kv_bytes_read(cfg, s, bits)
    floor = 2 * h_kv * d_h * s * bits // 8
    wrong = {floor: "round up to a whole byte: a partly used byte is still stored"} if floor != expected else {}
    what = f"bytes read per token by one layer (h_kv={h_kv}, d_h={d_h}, s={s}, {bits}-bit)"
    context = {"in_bits": [2 * h_kv * d_h * s * bits], "floor": list(wrong),
               "k_or_v": [-(-h_kv * d_h * s * bits // 8), 2 * expected]}
    diagnoses.check(got, expected, what, context, "bits_vs_bytes", "rounding", "k_and_v")
    expect_int(got, expected, what, wrong=wrong, hints=_BITS)


@question("cache_bytes_per_token", lambda spec, bits: f"cache bytes per token of {_name(spec)} ({bits}-bit)")
def _cache_bytes_per_token(got, spec, bits):
    cfg = config(spec)
    as_mha = mk.kv_cache_bytes_per_token(cfg.with_kv_heads(None), bits)
    wrong = {as_mha: "GQA counted as MHA: only the h_kv key-value heads are cached"} if cfg.num_kv_heads != cfg.num_heads else {}
    floor = cfg.num_layers * mk.kv_elements_per_token(cfg) * bits // 8
    expected = mk.kv_cache_bytes_per_token(cfg, bits)
    what = f"cache bytes per token of {_name(spec)} ({bits}-bit)"
    in_bits = cfg.num_layers * mk.kv_elements_per_token(cfg) * bits
    context = {"in_bits": [in_bits], "floor": [floor] if floor != expected else [], "with_h": list(wrong),
               "k_or_v": [-(-(in_bits // 2) // 8), 2 * expected]}
    diagnoses.check(got, expected, what, context, "h_vs_h_kv", "bits_vs_bytes", "rounding", "k_and_v")
    expect_int(got, expected, what, hints={**_BITS, Fraction(1, cfg.num_layers): "that is one layer: multiply by num_layers"})


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
    cfg = config(spec)
    expected = mk.max_context_tokens(cfg, memory, bits, B)
    what = f"longest {_name(spec)} context in {mk.format_bytes(memory)} ({bits}-bit, B={B})"
    bits_per_token = B * mk.kv_cache_bytes_per_token(cfg, 8) * bits  # at 8 bits a byte per cached element
    diagnoses.known(got, expected, what, [(int(memory * 8 / bits_per_token),
                                           "a float division loses whole tokens this large: divide with integers")])
    expect_int(got, expected, what, hints={8: "bits, not bytes", Fraction(1, 8): "bytes, not bits"})
