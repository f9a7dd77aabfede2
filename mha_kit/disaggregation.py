"""Disaggregated prefill and decode: what moving a prompt's KV cache costs against computing it.

When prefill and decode run on different GPUs, the prompt's keys and values, every layer's,
must travel from the prefill GPU to the decode GPU before the first decode step; when a cache
is offloaded to CPU memory or an SSD, it must travel back before it is reused. Either way the
bytes come from :func:`mha_kit.kv_cache_bytes` and the time is ``bytes / link rate``. What the
move saves is the prefill: the forward pass over the prompt, about ``2 * parameters`` FLOPs per
token plus the causal attention terms.

Book: chapter "Disaggregated prefill and decode".
"""
from __future__ import annotations

import numbers

from .config import check_positive_int
from .counting import kv_cache_bytes, projection_params
from .models import ModelFacts


def _check_rate(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < float("inf"):
        raise ValueError(f"{name} must be a positive number of {'bytes' if 'bytes' in name else 'FLOP'}/s, "
                         f"got {value!r}")
    return float(value)


def kv_transfer_seconds(cfg, prompt_tokens, link_bytes_per_s, fmt="bf16") -> float:
    """Seconds to send the KV cache of a ``prompt_tokens``-token prompt, all layers, over one link.

    ``kv_cache_bytes(cfg, prompt_tokens, fmt=fmt) / link_bytes_per_s``: the link's peak rate,
    no overlap with compute and no protocol overhead (a lower bound on the time).

    Parameters
    ----------
    cfg : AttentionConfig or LatentAttentionConfig
    prompt_tokens : int
    link_bytes_per_s : float
        One direction, e.g. ``mk.LINKS["ib-ndr"].bytes_per_s``.
    fmt : str
        Cache format, a name of :data:`mha_kit.DTYPE_BITS` (``"bf16"``, ``"fp8_e4m3"``...).

    Book: chapter "Disaggregated prefill and decode".
    """
    rate = _check_rate("link_bytes_per_s", link_bytes_per_s)
    return kv_cache_bytes(cfg, prompt_tokens, fmt=fmt) / rate


def prefill_flops(facts, prompt_tokens) -> int:
    """FLOPs of one forward pass over a prompt: every weight matrix once per token, plus causal attention.

    Per layer and token ``2 (P_attn + 3 d d_ff)`` for the attention projections
    (:func:`mha_kit.projection_params`) and the SwiGLU feed-forward; ``2 V d`` once, for the
    logits of the last token only; and per layer ``2 h d_h n (n + 1)`` for the scores and the
    value mix (token ``i`` attends to ``i`` keys, a ``d_h``-long multiply-add per query head for
    each score and each mixed value). Norms and the embedding lookup are left out.

    Parameters
    ----------
    facts : ModelFacts
        A dense decoder with ``param_layout == "llama"`` (``mk.MODEL_FACTS[name]``).
    prompt_tokens : int

    Book: chapter "Disaggregated prefill and decode".
    """
    n = check_positive_int("prompt_tokens", prompt_tokens)
    if not isinstance(facts, ModelFacts) or facts.param_layout != "llama":
        raise ValueError(f"prefill_flops needs a ModelFacts record with param_layout 'llama', got "
                         f"{getattr(facts, 'name', type(facts).__name__)!r}")
    cfg = facts.config
    per_token = cfg.num_layers * (projection_params(cfg) + 3 * cfg.d_model * facts.intermediate_size)
    attention = cfg.num_layers * 2 * cfg.num_heads * cfg.head_dim * n * (n + 1)
    return 2 * n * per_token + 2 * facts.vocab_size * cfg.d_model + attention


def prefill_seconds(facts, prompt_tokens, flop_rate) -> float:
    """:func:`prefill_flops` at ``flop_rate`` FLOP/s: the fastest the prompt can be computed.

    At a GPU's peak (``mk.GPUS[name].bf16_flops``) this is a lower bound; a real prefill reaches a
    fraction of the peak, so a transfer compared with it is compared with the least it saves.
    """
    return prefill_flops(facts, prompt_tokens) / _check_rate("flop_rate", flop_rate)
