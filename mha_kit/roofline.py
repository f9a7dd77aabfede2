"""The roofline model for one decode step: is it limited by bytes moved or by arithmetic?

A step that moves ``M`` bytes and does ``F`` floating-point operations cannot finish sooner
than ``M / bandwidth`` (memory) nor sooner than ``F / flop_rate`` (compute); the larger of the
two is its *roofline bound* (Williams, Waterman and Patterson, 2009). Which one wins depends on
the step's *arithmetic intensity* ``F / M`` against the machine's *ridge point*
``flop_rate / bandwidth``: below the ridge, bytes set the pace. (``B`` is the batch size
everywhere in this package, never bytes.)

Two roofs for the same step: the *classic* one divides by the machine's headline rates (a
STREAM copy, a large square GEMM); the *achievable* one by the rates of what decode really
does, a read-only stream of the cache and the skinny products of its shapes, both measured
(``benchmarks/decode_benchmark.py``). The formula is the same, :func:`roofline_seconds`.

Bytes and operations come from :mod:`mha_kit.counting`; rates are in bytes/s and FLOP/s.

Book: chapter "Measure it yourself".
"""
from __future__ import annotations

from dataclasses import replace

from .models import PRESETS
from .counting import arithmetic_intensity, attention_macs, kv_bytes_read


def benchmark_variants():
    """The four variants of one attention layer the decode benchmark times, all with 64 query heads.

    MHA, GQA-8 and MQA are Llama 3 70B (``d_h = 128``) with 64, 8 and 1 KV heads; MLA is
    DeepSeek-V2's latent shape (``d_c = 512``, ``d_rope = 64``) with 64 query heads instead of 128,
    so that every row has the same queries. Its decode intensity is therefore half of DeepSeek-V2's
    own (see :func:`decode_intensity`): what holds for this stand-in need not hold for the model.

    Returns
    -------
    dict: label -> AttentionConfig or LatentAttentionConfig
    """
    llama = PRESETS["llama-3-70b"]
    return {
        "MHA": llama.with_kv_heads(64),
        "GQA-8": llama,
        "MQA": llama.with_kv_heads(1),
        "MLA": replace(PRESETS["deepseek-v2"], num_heads=64, name="deepseek-v2-latent-64-heads"),
    }


def decode_flops(cfg, context_len) -> int:
    """FLOPs of attention for one decoded token and one layer: ``2 * attention_macs``."""
    return 2 * attention_macs(cfg, context_len)


def decode_intensity(cfg, fmt="bf16") -> float:
    """FLOPs per byte of cache read by one decode step (independent of the context length).

    ``2g / b`` for MHA, GQA and MQA; ``2 h (2 d_c + d_rope) / ((d_c + d_rope) b)`` for absorbed MLA:
    DeepSeek-V2's 128 heads in bf16 give 2176/9, about 241.8.
    """
    return arithmetic_intensity(cfg, 1, fmt)


def ridge_point(bandwidth, flop_rate) -> float:
    """FLOPs per byte at which a machine turns from memory-bound to compute-bound."""
    if bandwidth <= 0 or flop_rate <= 0:
        raise ValueError(f"bandwidth and flop_rate must be positive, got {bandwidth} and {flop_rate}")
    return flop_rate / bandwidth


def roofline_seconds(bytes_read, flops, bandwidth, flop_rate) -> float:
    """Shortest possible time: ``max(bytes_read / bandwidth, flops / flop_rate)`` seconds.

    With the copy bandwidth and the large-GEMM rate this is the classic roof; with the read-only
    bandwidth and the measured rate of the step's own products, the achievable one.
    """
    ridge_point(bandwidth, flop_rate)  # validates the rates
    return max(bytes_read / bandwidth, flops / flop_rate)


def overlap(load_seconds, multiply_seconds, both_seconds) -> float:
    """How much of the shorter of two parts a run of both hid, from 0 to 1.

    0 when ``both_seconds`` is their sum (one part, then the other), 1 when it is the larger of
    them (what a roof assumes); a run outside that range (noise) is clipped to it.
    """
    if min(load_seconds, multiply_seconds, both_seconds) <= 0:
        raise ValueError(f"times must be positive, got {load_seconds}, {multiply_seconds} and {both_seconds}")
    hidden = (load_seconds + multiply_seconds - both_seconds) / min(load_seconds, multiply_seconds)
    return min(max(hidden, 0.0), 1.0)


def decode_bound_seconds(cfg, context_len, bandwidth, flop_rate, fmt="bf16") -> float:
    """Roofline bound of one layer's decode step: its cache bytes and its attention FLOPs."""
    return roofline_seconds(kv_bytes_read(cfg, context_len, fmt), decode_flops(cfg, context_len),
                            bandwidth, flop_rate)


def limited_by(cfg, context_len, bandwidth, flop_rate, fmt="bf16") -> str:
    """``"memory"`` or ``"compute"``: which side of the ridge point the decode step sits on."""
    intensity = arithmetic_intensity(cfg, context_len, fmt)
    return "compute" if intensity > ridge_point(bandwidth, flop_rate) else "memory"


def token_memory_seconds(cfg, context_len, bandwidth, fmt="bf16") -> float:
    """Least time per token that reading the KV cache of **all layers** allows, in seconds.

    ``num_layers * kv_bytes_read / bandwidth``: the weights, read once per step whatever the
    context, come on top.
    """
    return cfg.num_layers * kv_bytes_read(cfg, context_len, fmt) / bandwidth
