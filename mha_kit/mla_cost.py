"""What MLA's two forms cost: the naive form for prefill, the absorbed form for decode.

The naive form up-projects each cached latent ``c`` into per-head keys and values
(``k_nope = c W_UK``, ``v = c W_UV``) and runs ordinary attention with head size
``d_nope + d_rope``. The absorbed form folds ``W_UK`` into each query and ``W_UV`` into each
output, and attends over the latent itself: like MQA with one shared key of ``d_c + d_rope``
numbers and one shared value of ``d_c``. Both compute the same layer (``mk.latent_attention``);
they differ in where the multiply-adds go (vLLM's MLA docstring calls the first "compute
friendly" and the second "data-movement friendly").

>>> import mha_kit as mk
>>> v3 = mk.PRESETS["deepseek-v3"]
>>> naive = mk.mla_attention_macs(v3, 1, 8192, form="naive")["total"]
>>> absorbed = mk.mla_attention_macs(v3, 1, 8192, form="absorbed")["total"]
>>> round(naive / absorbed)
119
"""
from __future__ import annotations

from types import MappingProxyType

from .config import LatentAttentionConfig, check_positive_int
from .counting import kv_elements_per_token
from .units import elements_to_bytes


def _pairs(num_queries, context_len, causal):
    """Query-key pairs: each query sees all ``s`` keys, or (causal) query ``i`` of the last ``n`` sees ``s - n + i + 1``."""
    n, s = num_queries, context_len
    return n * (s - n) + n * (n + 1) // 2 if causal else n * s


def mla_attention_macs(cfg, num_queries, context_len, form="absorbed", causal=False) -> dict:
    """Multiply-adds of one MLA layer for ``num_queries`` queries over ``context_len`` cached latents.

    Returns ``{"expand", "attention", "total"}``. Naive: ``expand`` up-projects every cached latent,
    ``s d_c h (d_nope + d_v)``; attention ``h * pairs * (d_nope + d_rope + d_v)``. Absorbed:
    ``expand`` folds ``W_UK`` into each query and ``W_UV`` into each output,
    ``n h d_c (d_nope + d_v)``; attention ``h * pairs * (2 d_c + d_rope)``. The projections both
    forms share (``W_DQ``, ``W_UQ``, ``W_DKV``, ``W_KR``, ``W_O``) are left out.

    Book: chapter "MLA as it is served".
    """
    if not isinstance(cfg, LatentAttentionConfig):
        raise ValueError(f"expected a LatentAttentionConfig, got {type(cfg).__name__}")
    n, s = check_positive_int("num_queries", num_queries), check_positive_int("context_len", context_len)
    if causal and n > s:
        raise ValueError(f"num_queries ({n}) must not exceed context_len ({s}) when causal: "
                         "the queries are the last tokens")
    h, d_c, d_rope = cfg.num_heads, cfg.kv_lora_rank, cfg.qk_rope_head_dim
    d_nope, d_v, pairs = cfg.qk_nope_head_dim, cfg.v_head_dim, _pairs(n, s, causal)
    if form == "naive":
        expand, attention = s * d_c * h * (d_nope + d_v), h * pairs * (d_nope + d_rope + d_v)
    elif form == "absorbed":
        expand, attention = n * h * d_c * (d_nope + d_v), h * pairs * (2 * d_c + d_rope)
    else:
        raise ValueError(f"form must be 'absorbed' or 'naive', got {form!r}")
    return {"expand": expand, "attention": attention, "total": expand + attention}


def mla_decode_intensity(cfg, heads_per_gpu=None, latent_bytes_per_token=None, query_tokens=1) -> float:
    """FLOPs per byte of cache read by absorbed MLA decode, per cached token and layer.

    Each cached token costs ``2 * h' * s_q * (2 d_c + d_rope)`` FLOPs for the ``h'`` query heads on
    the GPU and the ``s_q = query_tokens`` query tokens of the request in one step (1 in plain decoding,
    more when drafted tokens are verified), and ``latent_bytes_per_token`` bytes (default: bf16,
    ``2 (d_c + d_rope)``), read once whatever ``h' s_q``. With ``d_k = d_c + d_rope`` and
    ``d_v = d_c`` this is FlashMLA's ratio ``h_q s_q (d_k + d_v) / d_k`` in bf16 (its deep-dive,
    "A Theoretical Analysis of the MLA Algorithm"). All heads share the latent, so the intensity
    grows with the heads and tokens that read it on one GPU.
    """
    if not isinstance(cfg, LatentAttentionConfig):
        raise ValueError(f"expected a LatentAttentionConfig, got {type(cfg).__name__}")
    heads = cfg.num_heads if heads_per_gpu is None else check_positive_int("heads_per_gpu", heads_per_gpu)
    tokens = check_positive_int("query_tokens", query_tokens)
    per_token = elements_to_bytes(kv_elements_per_token(cfg), "bf16")  # (d_c + d_rope) bf16 numbers
    nbytes = per_token if latent_bytes_per_token is None else check_positive_int(
        "latent_bytes_per_token", latent_bytes_per_token)
    return 2 * heads * tokens * (2 * cfg.kv_lora_rank + cfg.qk_rope_head_dim) / nbytes


#: FlashMLA's deep-dive (docs/20250422-new-kernel-deep-dive.md, "A Theoretical Analysis of the MLA
#: Algorithm"): an H800 SXM5 peaks at 3.35 TB/s of memory bandwidth and 990 TFLOPS, but throttled to
#: about 1,600 MHz it reaches about 865 TFLOPS in practice (bytes/s and dense FLOP/s).
FLASHMLA_H800 = MappingProxyType({"hbm_bandwidth": 3.35e12, "peak_flops": 990e12, "throttled_flops": 865e12})


#: FlashMLA's FP8 cache for DeepSeek-V3.2's sparse attention: 512 float8_e4m3 latent numbers, four
#: float32 scales (one per 128 numbers) and the 64-number rotary key kept in bfloat16.
FLASHMLA_FP8_BYTES_PER_TOKEN = 512 * 1 + 4 * 4 + 64 * 2
