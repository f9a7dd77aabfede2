"""Counting: parameters, multiply-adds, scores and bytes of an attention layer.

Every function returns an exact Python ``int`` and counts **one layer** unless its name says
otherwise. A multiply-add (MAC) is one multiplication followed by one addition: 2 FLOPs.
Biases and normalisations are not counted.
"""
from __future__ import annotations

import numbers

from .config import AttentionConfig, LatentAttentionConfig, check_positive_int, renamed_keyword, type_name
from .models import MODEL_FACTS, ModelFacts
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


@renamed_keyword("dtype", "fmt")
def kv_bytes_read(cfg, context_len, fmt="bf16") -> int:
    """Bytes of keys and values read from one layer's cache to decode one token.

    ``context_len * 2 * h_kv * d_h`` elements of ``fmt`` (a name or a number of bits).

    Book: chapter "Worked example".
    """
    s = check_positive_int("context_len", context_len)
    return elements_to_bytes(s * kv_elements_per_token(cfg), fmt)


@renamed_keyword("dtype", "fmt")
def kv_cache_bytes_per_token(cfg, fmt="bf16") -> int:
    """Bytes of cache one token occupies across **all layers** of the model."""
    cfg = _check_config(cfg)
    return elements_to_bytes(cfg.num_layers * kv_elements_per_token(cfg), fmt)


@renamed_keyword("dtype", "fmt")
def kv_cache_bytes(cfg, context_len, batch_size=1, fmt="bf16") -> int:
    """Bytes of cache for ``batch_size`` sequences of ``context_len`` tokens, all layers."""
    cfg = _check_config(cfg)
    tokens = check_positive_int("context_len", context_len) * check_positive_int("batch_size", batch_size)
    return elements_to_bytes(tokens * cfg.num_layers * kv_elements_per_token(cfg), fmt)


@renamed_keyword("dtype", "fmt")
def max_context_tokens(cfg, memory_bytes, fmt="bf16", batch_size=1) -> int:
    """Most tokens of context per sequence whose cache fits in ``memory_bytes`` (all layers)."""
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, numbers.Integral):
        raise ValueError(f"memory_bytes must be a whole number of bytes, got {memory_bytes!r} "
                         f"({type_name(memory_bytes)})")
    memory = int(memory_bytes)
    if memory < 0:
        raise ValueError(f"memory_bytes must be non-negative, got {memory_bytes}")
    bits_per_token = check_positive_int("batch_size", batch_size) * _check_config(cfg).num_layers \
        * kv_elements_per_token(cfg) * dtype_bits(fmt)
    return memory * 8 // bits_per_token


@renamed_keyword("dtype", "fmt")
def arithmetic_intensity(cfg, context_len, fmt="bf16", queries_per_step=1) -> float:
    """FLOPs per byte of cache read when decoding one token: ``2 * attention_macs / kv_bytes_read``.

    ``queries_per_step`` queries of one sequence that read the cache once, such as the ``k + 1``
    positions a speculative verification step checks, multiply the FLOPs and not the bytes
    (each query against the ``context_len`` cached keys; book: chapter "Speculative decoding
    and the KV cache").
    """
    queries = check_positive_int("queries_per_step", queries_per_step)
    return 2 * attention_macs(cfg, context_len, num_queries=queries) / kv_bytes_read(cfg, context_len, fmt)


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


def decode_streamed_params(facts) -> int:
    """Parameters one batch-1 decode step streams from memory: all but the input embedding table.

    The embedding lookup gathers one row of the ``V x d`` table per token, so a step reads
    ``d`` of its ``V*d`` parameters; every other matrix (attention, FFN, norms, the untied
    output head) is read whole. Returns ``dense_decoder_params(facts) - V*d`` (``param_layout
    == "llama"``, untied head); the ``d`` gathered parameters are left out. Raises
    ``ValueError`` for a record :func:`dense_decoder_params` cannot count.

    Book: chapter "Serving reliability" (the CPU and Apple-silicon decode bound).
    """
    total = dense_decoder_params(facts)  # ValueError for records it cannot count
    return total - facts.vocab_size * facts.config.d_model  # drop the (V, d) input table


def model_params(facts) -> int:
    """Parameters of a whole model, from its :class:`mha_kit.ModelFacts` record.

    The record's published ``total_params`` when it has one (the mixtures of experts, every
    expert counted), otherwise :func:`dense_decoder_params` (``param_layout == "llama"``).
    Raises ``ValueError`` for a record with neither.

    Book: chapter "Worked example" (weights against cache).
    """
    if not isinstance(facts, ModelFacts):
        raise ValueError(f"expected a ModelFacts record (mk.MODEL_FACTS[name]), got {type(facts).__name__}")
    if facts.total_params is not None:
        return facts.total_params
    if facts.param_layout is None:
        raise ValueError(f"{facts.name}: no parameter count: the record has neither total_params nor a "
                         f"param_layout that dense_decoder_params can count")
    return dense_decoder_params(facts)


def _facts_and_config(model):
    """``(record or None, config)`` for a preset name, a ModelFacts record or a config."""
    if isinstance(model, str):
        if model not in MODEL_FACTS:
            raise ValueError(f"unknown preset {model!r}; known presets: {', '.join(MODEL_FACTS)}")
        model = MODEL_FACTS[model]
    if isinstance(model, ModelFacts):
        return model, model.config
    cfg = _check_config(model)
    facts = MODEL_FACTS.get(cfg.name)
    return (facts if facts is not None and facts.config == cfg else None), cfg


def kv_weight_crossover_tokens(model, fmt="bf16", weight_fmt=None, num_params=None) -> int:
    """Tokens in the KV cache (summed over the batch) at which the cache weighs as much as the weights.

    ``ceil(weight bytes / cache bytes per token)``: the weights are **all** the model's
    parameters (embeddings, every layer, output head; for a mixture of experts every expert),
    from its record (:func:`model_params`), in ``weight_fmt``; the cache per token is
    :func:`kv_cache_bytes_per_token` in ``fmt``. Below this many cached tokens a decode step
    reads more bytes of weights than of cache (a dense model reads every weight once per step,
    whatever the batch); above it the cache is the larger read and the larger allocation.

    Parameters
    ----------
    model : str, ModelFacts, AttentionConfig or LatentAttentionConfig
        A preset name (``"llama-3-70b"``), its record, or its config (``mk.PRESETS[name]``). Any
        other config needs ``num_params``.
    fmt : str or int
        Number format of the cache: a name (``"bf16"``, ``"fp8"``) or a number of bits.
    weight_fmt : str or int, optional
        Number format of the weights; ``None`` uses ``fmt``.
    num_params : int, optional
        Parameters to count instead of the record's, e.g. ``facts.active_params``: the weights an
        MoE decode step at batch 1 actually reads.

    Returns
    -------
    int
        Whole tokens: the smallest count whose cache is at least the weights' bytes.

    Book: chapter "Worked example" (weights against cache at batch 1).
    """
    facts, cfg = _facts_and_config(model)
    if num_params is None:
        if facts is None:
            raise ValueError(f"no model record for the config {cfg.name!r}: pass num_params, the parameters "
                             f"whose weights the cache is compared with")
        num_params = model_params(facts)
    weight_bytes = elements_to_bytes(check_positive_int("num_params", num_params),
                                     fmt if weight_fmt is None else weight_fmt)
    per_token = kv_cache_bytes_per_token(cfg, fmt)
    return -(-weight_bytes // per_token)


# ---------------------------------------------------------------------------------------------
# What attention costs: the n^2 terms against the per-token terms, prefill against decode,
# and the bytes moved between HBM and SRAM (book chapter "What attention costs").
# ---------------------------------------------------------------------------------------------

def crossover_length(cfg, intermediate_size=None) -> int:
    """Shortest sequence length ``n`` at which the ``n^2`` attention terms reach the per-token terms.

    Over ``n`` tokens one layer does ``n * P`` multiply-adds in its projections (``P`` =
    :func:`projection_params`; plus ``n * 3 * d * d_ff`` for a SwiGLU feed-forward of width
    ``intermediate_size``) and ``c * n^2`` in scores and mix, with ``c = attention_macs(cfg, 1)``
    (``2 * h * d_h``; no causal saving). They are equal at ``n = per_token / c``; this returns the
    smallest whole ``n`` with ``c * n^2 >= per_token * n``.

    Book: chapter "What attention costs".
    """
    per_token = projection_params(cfg)
    if intermediate_size is not None:
        per_token += 3 * cfg.d_model * check_positive_int("intermediate_size", intermediate_size)
    return -(-per_token // attention_macs(cfg, 1))  # ceil(per_token / c)


def score_matrix_bytes(cfg, n, fmt="bf16") -> int:
    """Bytes of the ``h x n x n`` score matrix of one layer, the memory FlashAttention never holds."""
    return elements_to_bytes(score_count(cfg, n), fmt)


def qkvo_bytes(cfg, n, fmt="bf16") -> int:
    """Bytes of one layer's queries, keys, values and outputs for ``n`` tokens: ``n * (2*h + 2*h_kv) * d_h``."""
    cfg = _check_config(cfg, allow_latent=False)
    n = check_positive_int("n", n)
    return elements_to_bytes(n * (2 * cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim, fmt)


def layer_flops(cfg, num_tokens, context_len, batch_size=1) -> int:
    """FLOPs of one attention layer for ``num_tokens`` new tokens attending to ``context_len`` keys.

    ``2 * B * (projection_macs(num_tokens) + attention_macs(context_len, num_tokens))``. Prefill
    of a prompt: ``num_tokens = context_len = n``; one decode step: ``num_tokens = 1``.
    """
    b = check_positive_int("batch_size", batch_size)
    return 2 * b * (projection_macs(cfg, num_tokens) + attention_macs(cfg, context_len, num_tokens))


def layer_bytes(cfg, num_tokens, context_len, batch_size=1, fmt="bf16") -> int:
    """Fewest bytes one attention layer moves from or to HBM for the work of :func:`layer_flops`.

    The weights once (shared by the batch), and per sequence its input and output activations
    (``2 * num_tokens * d``) and the cached keys and values of ``context_len`` tokens.
    """
    b, n = check_positive_int("batch_size", batch_size), check_positive_int("num_tokens", num_tokens)
    s = check_positive_int("context_len", context_len)
    per_sequence = 2 * n * cfg.d_model + s * kv_elements_per_token(cfg)
    return elements_to_bytes(projection_params(cfg) + b * per_sequence, fmt)


def layer_intensity(cfg, num_tokens, context_len, batch_size=1, fmt="bf16") -> float:
    """Arithmetic intensity, FLOPs per byte: :func:`layer_flops` / :func:`layer_bytes`."""
    return layer_flops(cfg, num_tokens, context_len, batch_size) / layer_bytes(
        cfg, num_tokens, context_len, batch_size, fmt)


def standard_attention_io(n, d) -> int:
    """Elements one head's standard attention reads from and writes to HBM (Dao et al. 2022, Alg. 0).

    Read ``Q, K`` (``2nd``), write ``S`` (``n^2``); read ``S``, write ``P`` (``2n^2``); read ``P``
    and ``V``, write ``O`` (``n^2 + 2nd``): ``4nd + 4n^2`` in all, whatever the SRAM size.
    """
    n, d = check_positive_int("n", n), check_positive_int("d", d)
    return 4 * n * d + 4 * n * n


def flash_block_sizes(d, sram_elements) -> tuple:
    """``(B_r, B_c)`` of Algorithm 1: ``B_c = ceil(M / 4d)``, ``B_r = min(ceil(M / 4d), d)``."""
    d, m = check_positive_int("d", d), check_positive_int("sram_elements", sram_elements)
    if m < 4 * d:
        raise ValueError(f"sram_elements ({m}) must hold one row each of Q, K, V and O: at least 4*d = {4 * d}")
    b_c = -(-m // (4 * d))
    return min(b_c, d), b_c


def flash_attention_io(n, d, sram_elements) -> int:
    """Elements one head's FlashAttention forward pass reads from and writes to HBM (Alg. 1).

    With ``T_c = ceil(n / B_c)`` (:func:`flash_block_sizes`): initialise ``O, l, m`` in HBM
    (``nd + 2n``); load every block of ``K`` and ``V`` once (``2nd``); in each of the ``T_c``
    outer passes read ``Q, O, l, m`` and write ``O, l, m`` (``3nd + 4n``). In all
    ``3nd + 2n + T_c (3nd + 4n)``, which is ``Theta(n^2 d^2 / M)`` (the paper's Theorem 2).
    """
    n = check_positive_int("n", n)
    _, b_c = flash_block_sizes(d, sram_elements)
    t_c = -(-n // b_c)
    return 3 * n * d + 2 * n + t_c * (3 * n * d + 4 * n)


def flash_io_break_even(n, d):
    """Smallest SRAM size ``M`` (elements) at which Algorithm 1 moves fewer elements than Algorithm 0.

    The count of :func:`flash_attention_io` changes only with ``B_c = ceil(M / 4d)``, and the
    smallest ``M`` giving block width ``B_c`` is ``4d (B_c - 1) + 1``. Returns ``None`` when no
    ``M`` up to ``4nd`` (one block holding every key) wins.
    """
    n, d = check_positive_int("n", n), check_positive_int("d", d)
    standard = standard_attention_io(n, d)
    for b_c in range(1, n + 1):
        m = max(4 * d * (b_c - 1) + 1, 4 * d)  # the smallest M with this B_c that holds one row of each
        if flash_attention_io(n, d, m) < standard:
            return m
    return None
