"""Counting: parameters, multiply-adds, scores and bytes of an attention layer.

Every function returns an exact Python ``int`` and counts **one layer** unless its name says
otherwise. A multiply-add (MAC) is one multiplication followed by one addition: 2 FLOPs.
Biases and normalisations are not counted.
"""
from __future__ import annotations

import numbers

from .config import AttentionConfig, LatentAttentionConfig, check_positive_int
from .models import ModelFacts
from .units import dtype_bits, elements_to_bytes


def _check_config(cfg, allow_latent=True):
    kinds = (AttentionConfig, LatentAttentionConfig) if allow_latent else (AttentionConfig,)
    if not isinstance(cfg, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ValueError(f"expected an {names}, got {type(cfg).__name__}")
    return cfg


def projection_params(cfg) -> int:
    """Parameters of the Q, K, V and O projections of one layer (no biases).

    ``d*h*d_h`` (Q) + ``2*d*h_kv*d_h`` (K, V) + ``h*d_h*d`` (O). For MLA: every matrix of
    :class:`mha_kit.LatentWeights` (down- and up-projections, rotary parts, output).

    Book: chapter "From first principles", step 4.
    """
    cfg = _check_config(cfg)
    if isinstance(cfg, LatentAttentionConfig):
        return _latent_params(cfg)
    d, h, h_kv, d_h = cfg.d_model, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    return d * h * d_h + 2 * d * h_kv * d_h + h * d_h * d


def projection_params_by_matrix(cfg: AttentionConfig) -> dict:
    """``{"q": ..., "k": ..., "v": ..., "o": ...}``: parameters of each projection matrix."""
    cfg = _check_config(cfg, allow_latent=False)
    q = cfg.d_model * cfg.num_heads * cfg.head_dim
    kv = cfg.d_model * cfg.num_kv_heads * cfg.head_dim
    return {"q": q, "k": kv, "v": kv, "o": q}


def _latent_params(cfg: LatentAttentionConfig) -> int:
    d, h, d_c = cfg.d_model, cfg.num_heads, cfg.kv_lora_rank
    q_in = d if cfg.q_lora_rank is None else cfg.q_lora_rank
    query = (0 if cfg.q_lora_rank is None else d * cfg.q_lora_rank) + q_in * h * cfg.qk_head_dim
    key_value = d * d_c + d_c * h * (cfg.qk_nope_head_dim + cfg.v_head_dim) + d * cfg.qk_rope_head_dim
    return query + key_value + h * cfg.v_head_dim * d


def projection_macs(cfg, num_tokens=1) -> int:
    """Multiply-adds of the four projections for ``num_tokens`` tokens: each weight once per token."""
    return projection_params(cfg) * check_positive_int("num_tokens", num_tokens)


def attention_macs(cfg, context_len, num_queries=1, form="absorbed") -> int:
    """Multiply-adds of the score (``q k^T``) and value-mix (``weights v``) steps.

    For ``num_queries`` queries each attending to ``context_len`` keys (no causal saving):
    ``2 * h * num_queries * context_len * d_h``. The default, one query, is one decoded token;
    :func:`sequence_attention_macs` is the full ``n x n`` pass. It depends on the query heads
    only: grouped-query and multi-query attention change nothing here.

    For MLA, ``form="absorbed"`` counts attention over the latents,
    ``h * n * s * (d_c + d_rope)`` for scores plus ``h * n * s * d_c`` for the mix, and
    ``form="naive"`` counts full per-head keys, ``h * n * s * (d_nope + d_rope + d_v)``.

    Book: chapters "From first principles" (step 4) and "Worked example".
    """
    cfg = _check_config(cfg)
    s = check_positive_int("context_len", context_len)
    n = check_positive_int("num_queries", num_queries)
    if form not in ("absorbed", "naive"):  # checked for every config, so a typo never passes silently
        raise ValueError(f"form must be 'absorbed' or 'naive', got {form!r}")
    if isinstance(cfg, AttentionConfig):
        return 2 * cfg.num_heads * n * s * cfg.head_dim
    if form == "absorbed":
        return cfg.num_heads * n * s * (2 * cfg.kv_lora_rank + cfg.qk_rope_head_dim)
    return cfg.num_heads * n * s * (cfg.qk_head_dim + cfg.v_head_dim)


def sequence_attention_macs(cfg, n) -> int:
    """Score and value-mix multiply-adds for a whole ``n``-token sequence: ``2 * h * n^2 * d_h``.

    With ``d_h = d / h`` this is ``2 * n^2 * d`` whatever the number of heads.
    """
    return attention_macs(cfg, n, num_queries=n)


def score_count(cfg, n) -> int:
    """Attention scores held for an ``n``-token sequence, all heads: ``h * n^2``."""
    cfg = _check_config(cfg)
    n = check_positive_int("n", n)
    return cfg.num_heads * n * n


def kv_elements_per_token(cfg) -> int:
    """Numbers cached per token for **one layer**: ``2 * h_kv * d_h`` (MLA: ``d_c + d_rope``)."""
    cfg = _check_config(cfg)
    if isinstance(cfg, LatentAttentionConfig):
        return cfg.cache_elements_per_layer
    return 2 * cfg.num_kv_heads * cfg.head_dim


def kv_bytes_read(cfg, context_len, dtype="bf16") -> int:
    """Bytes of keys and values read from one layer's cache to decode one token.

    ``context_len * 2 * h_kv * d_h`` elements of ``dtype`` (a name or a number of bits).

    Book: chapter "Worked example".
    """
    s = check_positive_int("context_len", context_len)
    return elements_to_bytes(s * kv_elements_per_token(cfg), dtype)


def kv_cache_bytes_per_token(cfg, dtype="bf16") -> int:
    """Bytes of cache one token occupies across **all layers** of the model."""
    cfg = _check_config(cfg)
    return elements_to_bytes(cfg.num_layers * kv_elements_per_token(cfg), dtype)


def kv_cache_bytes(cfg, context_len, batch_size=1, dtype="bf16") -> int:
    """Bytes of cache for ``batch_size`` sequences of ``context_len`` tokens, all layers."""
    cfg = _check_config(cfg)
    tokens = check_positive_int("context_len", context_len) * check_positive_int("batch_size", batch_size)
    return elements_to_bytes(tokens * cfg.num_layers * kv_elements_per_token(cfg), dtype)


def max_context_tokens(cfg, memory_bytes, dtype="bf16", batch_size=1) -> int:
    """Most tokens of context per sequence whose cache fits in ``memory_bytes`` (all layers)."""
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, numbers.Integral):
        raise ValueError(f"memory_bytes must be a whole number of bytes, got {memory_bytes!r} "
                         f"({type(memory_bytes).__name__})")
    memory = int(memory_bytes)
    if memory < 0:
        raise ValueError(f"memory_bytes must be non-negative, got {memory_bytes}")
    bits_per_token = check_positive_int("batch_size", batch_size) * _check_config(cfg).num_layers \
        * kv_elements_per_token(cfg) * dtype_bits(dtype)
    return memory * 8 // bits_per_token


def arithmetic_intensity(cfg, context_len, dtype="bf16") -> float:
    """FLOPs per byte of cache read when decoding one token: ``2 * attention_macs / kv_bytes_read``."""
    return 2 * attention_macs(cfg, context_len) / kv_bytes_read(cfg, context_len, dtype)


def cache_reduction(smaller, larger) -> float:
    """Fraction saved: ``1 - smaller / larger`` (``0.822`` means 82.2% smaller)."""
    if larger <= 0 or smaller < 0:
        raise ValueError(f"cache sizes must be non-negative with a positive reference, got {smaller} and {larger}")
    return 1 - smaller / larger


def dense_decoder_params(facts) -> int:
    """Parameters of a whole dense decoder from its :class:`mha_kit.ModelFacts` record.

    For ``param_layout == "llama"`` (RMSNorm, SwiGLU, no biases, untied output head)::

        V*d (embeddings) + L*(attention + 3*d*d_ff + 2*d) + d (final norm) + V*d (output head)

    Raises ``ValueError`` for a record without that layout or without ``vocab_size`` and
    ``intermediate_size``.

    Book: chapter "KV cache calculator" (how much context fits next to the weights).
    """
    if not isinstance(facts, ModelFacts):
        raise ValueError(f"expected a ModelFacts record (mk.MODEL_FACTS[name]), got {type(facts).__name__}")
    if facts.param_layout != "llama" or facts.vocab_size is None or facts.intermediate_size is None:
        raise ValueError(f"{facts.name}: dense_decoder_params needs param_layout 'llama' with vocab_size and "
                         f"intermediate_size, got param_layout={facts.param_layout!r}")
    cfg, v, d_ff = facts.config, facts.vocab_size, facts.intermediate_size
    d = cfg.d_model
    per_layer = projection_params(cfg) + 3 * d * d_ff + 2 * d  # attention + SwiGLU + two norms
    return v * d + cfg.num_layers * per_layer + d + v * d
