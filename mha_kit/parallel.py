"""Attention and its cache on several GPUs: tensor and context parallelism, counted.

Under ``t``-way tensor parallelism each GPU computes ``h / t`` query heads. Key-value heads are
split the same way while ``t <= h_kv`` and replicated beyond it, one per GPU, so the cache per GPU
stops shrinking at ``t = h_kv`` (vLLM's ``QKVParallelLinear``, ``vllm/model_executor/layers/
linear.py``: ``num_kv_heads = 1`` and ``num_kv_head_replicas = tp_size // total_num_kv_heads``
when ``tp_size >= total_num_kv_heads``). MLA's cached latent belongs to no head: every rank keeps
all of it. Under ``c``-way context parallelism (ring attention) each GPU keeps ``1 / c`` of the
sequence and passes its keys and values around the ring.

>>> import mha_kit as mk
>>> cfg = mk.PRESETS["llama-3-70b"]  # h = 64, h_kv = 8, d_h = 128, 80 layers
>>> mk.format_bytes(mk.kv_cache_bytes_per_gpu(cfg, 8192, tp=8))
'320 MiB'
>>> mk.format_bytes(mk.kv_cache_bytes_per_gpu(cfg, 8192, tp=16))  # h_kv = 8: replicated, same
'320 MiB'
"""
from __future__ import annotations

import math

from .config import AttentionConfig, LatentAttentionConfig, check_positive_int
from .counting import attention_macs, kv_elements_per_token
from .units import elements_to_bytes


def kv_heads_per_gpu(num_kv_heads, tp) -> int:
    """Key-value heads one GPU holds under ``tp``-way tensor parallelism: ``max(h_kv / t, 1)``.

    ``h_kv = 8``: ``t = 2`` -> 4 heads, ``t = 8`` -> 1, ``t = 16`` -> 1 (each head on two GPUs).
    ``t`` must divide ``h_kv`` or be a multiple of it, as vLLM's ``divide`` requires.
    """
    h_kv, t = check_positive_int("num_kv_heads", num_kv_heads), check_positive_int("tp", tp)
    if t <= h_kv and h_kv % t:
        raise ValueError(f"tp ({t}) must divide num_kv_heads ({h_kv}) when tp <= num_kv_heads")
    if t > h_kv and t % h_kv:
        raise ValueError(f"tp ({t}) must be a multiple of num_kv_heads ({h_kv}) when tp > num_kv_heads: "
                         "each key-value head is replicated on tp / num_kv_heads GPUs")
    return max(h_kv // t, 1)


def kv_elements_per_token_per_gpu(cfg, tp) -> int:
    """Numbers one GPU caches per token for one layer under ``tp``-way tensor parallelism.

    GQA/MHA/MQA: ``2 * kv_heads_per_gpu * d_h``. MLA: ``d_c + d_rope`` on every rank (the latent
    is shared by all heads, so no head split divides it).
    """
    t = check_positive_int("tp", tp)
    if isinstance(cfg, LatentAttentionConfig):
        if cfg.num_heads % t:
            raise ValueError(f"tp ({t}) must divide num_heads ({cfg.num_heads}): each GPU computes whole heads")
        return cfg.cache_elements_per_layer
    if not isinstance(cfg, AttentionConfig):
        raise ValueError(f"expected an AttentionConfig or LatentAttentionConfig, got {type(cfg).__name__}")
    if cfg.num_heads % t:
        raise ValueError(f"tp ({t}) must divide num_heads ({cfg.num_heads}): each GPU computes whole heads")
    return 2 * kv_heads_per_gpu(cfg.num_kv_heads, t) * cfg.head_dim


def kv_cache_bytes_per_gpu(cfg, context_len, tp, batch_size=1, fmt="bf16") -> int:
    """Bytes of cache one GPU holds for ``batch_size`` sequences of ``context_len`` tokens, all layers.

    Book: part "Serving at scale" (tensor parallelism and the cache).
    """
    tokens = check_positive_int("context_len", context_len) * check_positive_int("batch_size", batch_size)
    return elements_to_bytes(tokens * cfg.num_layers * kv_elements_per_token_per_gpu(cfg, tp), fmt)


def ring_attention_bytes(cfg, context_len, cp, fmt="bf16") -> int:
    """Bytes each of ``cp`` ranks sends, per layer, in one ring pass over a ``context_len`` prefill.

    Each rank holds ``context_len / cp`` tokens of keys and values and forwards a block of that
    size to its neighbour ``cp - 1`` times, until every rank has seen every block (Liu et al.,
    Ring Attention, arXiv:2310.01889, Algorithm 1). The block is what the cache holds per token:
    ``2 h_kv d_h`` numbers, or MLA's latent and rotary key.
    """
    s, c = check_positive_int("context_len", context_len), check_positive_int("cp", cp)
    if s % c:
        raise ValueError(f"context_len ({s}) must be divisible by cp ({c}): each rank holds an equal share")
    return elements_to_bytes((c - 1) * (s // c) * kv_elements_per_token(cfg), fmt)


def all_reduce_bytes_per_gpu(num_elements, tp, fmt="bf16") -> int:
    """Bytes each of ``tp`` GPUs sends in a ring all-reduce of ``num_elements`` numbers.

    A ring all-reduce is a reduce-scatter then an all-gather, each sending ``(t - 1) / t`` of the
    message per GPU: ``2 (t - 1) / t * num_elements`` numbers in all. Under tensor parallelism a
    decoder layer all-reduces its ``(tokens, d)`` output twice, after attention and after the MLP.
    """
    n, t = check_positive_int("num_elements", num_elements), check_positive_int("tp", tp)
    if n % t:
        raise ValueError(f"num_elements ({n}) must be divisible by tp ({t}): the ring splits it into tp chunks")
    return elements_to_bytes(2 * (t - 1) * (n // t), fmt)


def ring_overlap_min_tokens(cfg, flop_rate, link_bytes_per_s, fmt="bf16") -> int:
    """Fewest tokens per rank for which one ring step's attention hides the next block's transfer.

    A step computes ``(s/c)^2`` query-key pairs (``2 * attention_macs`` FLOPs each: ``4 h d_h``,
    MLA in its naive prefill form) and sends ``s/c`` tokens of cache: the transfer is hidden when
    ``s/c >= bytes_per_token * flop_rate / (flops_per_pair * link_bytes_per_s)``, both at peak.
    """
    for name, rate in (("flop_rate", flop_rate), ("link_bytes_per_s", link_bytes_per_s)):
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            raise ValueError(f"{name} must be a positive number, got {rate!r}")
    flops_per_pair = 2 * attention_macs(cfg, 1, form="naive")
    bytes_per_token = elements_to_bytes(kv_elements_per_token(cfg), fmt)
    return math.ceil(bytes_per_token * flop_rate / (flops_per_pair * link_bytes_per_s))


def causal_pairs_per_rank(num_tokens, cp, layout="contiguous") -> list:
    """Causal query-key pairs each of ``cp`` ranks computes when the queries are split by position.

    ``"contiguous"``: rank ``r`` takes the ``r``-th run of ``n / cp`` queries, so the last rank
    does the most work. ``"zigzag"``: the sequence is cut into ``2 cp`` chunks and rank ``r`` takes
    chunks ``r`` and ``2 cp - 1 - r``, an early and a late one, which evens the work (Llama 3's
    context parallelism, arXiv:2407.21783 sec. 3.3.2).
    """
    n, c = check_positive_int("num_tokens", num_tokens), check_positive_int("cp", cp)
    if layout not in ("contiguous", "zigzag"):
        raise ValueError(f"layout must be 'contiguous' or 'zigzag', got {layout!r}")
    chunks = c if layout == "contiguous" else 2 * c
    if n % chunks:
        raise ValueError(f"num_tokens ({n}) must be divisible by {chunks} chunks ({layout}, cp = {c})")
    size = n // chunks

    def pairs(k):  # queries k*size .. (k+1)*size - 1, query i sees i + 1 keys
        first, last = k * size + 1, (k + 1) * size
        return (first + last) * size // 2

    if layout == "contiguous":
        return [pairs(r) for r in range(c)]
    return [pairs(r) + pairs(2 * c - 1 - r) for r in range(c)]


def ulysses_all_to_all_bytes(cfg, context_len, sp, fmt="bf16") -> int:
    """Bytes each of ``sp`` ranks sends, per layer, in DeepSpeed-Ulysses' four all-to-alls.

    Each rank holds ``s / sp`` tokens. Before attention an all-to-all trades them for heads: every
    rank sends each peer that peer's ``1 / sp`` of its queries (``h d_h`` per token), keys and
    values (``h_kv d_h`` each), keeping its own share; after attention a fourth all-to-all sends the
    outputs (``h d_h``) back by position (Jacobs et al., DeepSpeed-Ulysses, arXiv:2309.14509 sec.
    3): ``(sp - 1) * (s / sp) * (2 h + 2 h_kv) d_h / sp`` numbers, falling as ``1 / sp`` where a
    ring's ``(c - 1) s / c`` tokens of cache do not. Each rank must get whole query and key-value
    heads, so ``sp`` must divide ``h`` and ``h_kv``.

    Parameters
    ----------
    cfg : AttentionConfig
    context_len : int
        Tokens of the sequence, ``s``.
    sp : int
        Ulysses degree.
    fmt : str
        Format of the activations sent, a name of :data:`mha_kit.DTYPE_BITS`.
    """
    s, p = check_positive_int("context_len", context_len), check_positive_int("sp", sp)
    if not isinstance(cfg, AttentionConfig):
        raise ValueError(f"Ulysses splits heads: expected an AttentionConfig, got {type(cfg).__name__}")
    if cfg.num_kv_heads % p or cfg.num_heads % p:
        raise ValueError(f"the Ulysses degree sp ({p}) must divide num_heads ({cfg.num_heads}) and num_kv_heads "
                         f"({cfg.num_kv_heads}): each rank attends with whole heads; beyond that, replicate "
                         "key-value heads or add a ring (USP)")
    if s % p:
        raise ValueError(f"context_len ({s}) must be divisible by sp ({p}): each rank holds an equal share")
    per_token_share = (2 * cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim // p  # one peer's heads
    return elements_to_bytes((p - 1) * (s // p) * per_token_share, fmt)


def pipeline_bubble_fraction(stages, micro_batches) -> float:
    """Share of each stage's time spent idle when ``m`` micro-batches flow through ``p`` stages.

    GPipe's schedule (Huang et al., arXiv:1811.06965 sec. 2.2): the last micro-batch leaves the
    last stage after ``m + p - 1`` stage-steps, of which each stage works ``m``, so the idle share
    is ``(p - 1) / (m + p - 1)``: 0 for one stage, ``(p - 1) / p`` for a single micro-batch.
    """
    p = check_positive_int("stages", stages)
    m = check_positive_int("micro_batches", micro_batches)
    return (p - 1) / (m + p - 1)
