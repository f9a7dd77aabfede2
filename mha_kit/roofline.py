"""The roofline model for one decode step: is it limited by bytes moved or by arithmetic?

A step that reads ``B`` bytes and does ``F`` floating-point operations cannot finish sooner
than ``B / bandwidth`` (memory) nor sooner than ``F / flop_rate`` (compute); the larger of the
two is its *roofline bound* (Williams, Waterman and Patterson, 2009). Which one wins depends on
the step's *arithmetic intensity* ``F / B`` against the machine's *ridge point*
``flop_rate / bandwidth``: below the ridge, bytes set the pace.

Bytes and operations come from :mod:`mha_kit.counting`; rates are in bytes/s and FLOP/s.

Book: chapter "Measure it yourself".
"""
from __future__ import annotations

from dataclasses import replace

from .models import PRESETS
from .counting import arithmetic_intensity, attention_macs, kv_bytes_read


def benchmark_variants():
    """The four layers the decode benchmark times, each with Llama 3 70B's 64 query heads.

    MHA, GQA-8 and MQA are Llama 3 70B (``d_h = 128``) with 64, 8 and 1 KV heads; MLA is
    DeepSeek-V2's latent shape (``d_c = 512``, ``d_rope = 64``) with 64 query heads instead of 128,
    so that every row has the same queries.

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


def ridge_point(bandwidth, flop_rate) -> float:
    """FLOPs per byte at which a machine turns from memory-bound to compute-bound."""
    if bandwidth <= 0 or flop_rate <= 0:
        raise ValueError(f"bandwidth and flop_rate must be positive, got {bandwidth} and {flop_rate}")
    return flop_rate / bandwidth


def roofline_seconds(bytes_read, flops, bandwidth, flop_rate) -> float:
    """Shortest possible time: ``max(bytes_read / bandwidth, flops / flop_rate)`` seconds."""
    ridge_point(bandwidth, flop_rate)  # validates the rates
    return max(bytes_read / bandwidth, flops / flop_rate)


def decode_bound_seconds(cfg, context_len, bandwidth, flop_rate, dtype="bf16") -> float:
    """Roofline bound of one layer's decode step: its cache bytes and its attention FLOPs."""
    return roofline_seconds(kv_bytes_read(cfg, context_len, dtype), decode_flops(cfg, context_len),
                            bandwidth, flop_rate)


def limited_by(cfg, context_len, bandwidth, flop_rate, dtype="bf16") -> str:
    """``"memory"`` or ``"compute"``: which side of the ridge point the decode step sits on."""
    intensity = arithmetic_intensity(cfg, context_len, dtype)
    return "compute" if intensity > ridge_point(bandwidth, flop_rate) else "memory"


def token_memory_seconds(cfg, context_len, bandwidth, dtype="bf16") -> float:
    """Least time per token that reading the KV cache of **all layers** allows, in seconds.

    ``num_layers * kv_bytes_read / bandwidth``: the weights, read once per step whatever the
    context, come on top.
    """
    return cfg.num_layers * kv_bytes_read(cfg, context_len, dtype) / bandwidth
