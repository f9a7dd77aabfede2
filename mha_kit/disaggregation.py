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


def _check_per_second(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < float("inf"):
        raise ValueError(f"{name} must be a positive number per second, got {value!r}")
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


def prefix_prefill_flops(facts, cached_tokens, new_tokens) -> int:
    """FLOPs of prefilling ``new_tokens`` after ``cached_tokens`` whose cache is already there.

    The weights see only the new tokens, ``2 (P_attn + 3 d d_ff)`` a layer each, plus the last
    token's logits; new token ``i`` (1-based) attends to ``cached_tokens + i`` keys, ``4 h d_h``
    FLOPs a key per layer. With ``cached_tokens = 0`` this is :func:`prefill_flops`. A prefix-cache
    hit skips the cached tokens' weight FLOPs and their own attention; chunked prefill, which
    computes a prompt as successive ``(cached, new)`` chunks, skips nothing: its chunks' FLOPs add
    up to the whole prompt's.
    """
    if isinstance(cached_tokens, bool) or not isinstance(cached_tokens, numbers.Integral) or cached_tokens < 0:
        raise ValueError(f"cached_tokens must be an integer >= 0, got {cached_tokens!r}")
    c = int(cached_tokens)
    n = check_positive_int("new_tokens", new_tokens)
    whole = prefill_flops(facts, n)  # checks facts; the weights' and logits' terms are the same
    cfg = facts.config
    no_prefix = cfg.num_layers * 2 * cfg.num_heads * cfg.head_dim * n * (n + 1)
    with_prefix = cfg.num_layers * 4 * cfg.num_heads * cfg.head_dim * (n * c + n * (n + 1) // 2)
    return whole - no_prefix + with_prefix


def pd_instances(rate, input_tokens, output_tokens, prefill_tokens_per_s, decode_tokens_per_s) -> tuple:
    """Prefill and decode instances (fractional) that a steady ``rate`` of requests keeps busy.

    Each request brings ``input_tokens`` to prefill and ``output_tokens`` to decode; one prefill
    instance computes ``prefill_tokens_per_s`` prompt tokens a second (at the batch that meets the
    time-to-first-token target), one decode instance emits ``decode_tokens_per_s`` (at the batch
    whose step meets the time-per-output-token target). Hence ``x = rate * input / prefill rate``
    and ``y = rate * output / decode rate``: DistServe sizes each phase this way, from its own
    per-instance goodput (Zhong et al., arXiv:2401.09670 sec. 4.1, Algorithm 1). Round each up.

    Returns
    -------
    (float, float)
        ``(x, y)``, the instances of the xPyD split.
    """
    i = check_positive_int("input_tokens", input_tokens)
    o = check_positive_int("output_tokens", output_tokens)
    r, p, d = (_check_per_second(name, value) for name, value in (
        ("rate", rate), ("prefill_tokens_per_s", prefill_tokens_per_s), ("decode_tokens_per_s", decode_tokens_per_s)))
    return r * i / p, r * o / d
