"""Engine memory: one block's activations per GPU, a KIVI-style quantized cache's bytes, and the KV pool
each serving engine builds from its memory fraction.

* :func:`block_activation_bytes`: the main tensors one decoder block holds during an inference
  step, on one GPU of a tensor-parallel group (TensorRT-LLM's memory reference, "Activation size",
  item 3: tensor parallelism splits some tensors, a pipeline stage holds full-size ones and reuses
  one block's memory from layer to layer).
* :func:`residual_window_cache_bytes`: the stored bytes of Hugging Face transformers' ``QuantizedCache``,
  quantized history plus a full-precision window of at most ``residual_length`` tokens
  (``src/transformers/cache_utils.py``, ``QuantizedLayer.update``).
* :func:`engine_kv_pool`: the KV pool that vLLM, SGLang and TensorRT-LLM size from the same memory
  fraction, each by its own rule, and the memory each leaves unclaimed.

Book: chapters "Tensor parallelism and the cache", "Serving in production" and "The KV cache".
"""
from __future__ import annotations

from typing import NamedTuple

from .config import check_positive_int


def block_activation_bytes(tokens, d_model, qkv_width, intermediate_size, tp=1, bytes_per_element=2):
    """Bytes of one decoder block's main activation tensors on one GPU, for one inference step.

    Counts the residual stream ``tokens x d_model`` (whole on every tensor-parallel rank: each rank
    holds the full hidden state after the all-reduce), the query, key and value projections
    ``tokens x qkv_width / tp`` and the gated feed-forward block's two intermediates
    ``2 x tokens x intermediate_size / tp`` (split by heads and by columns, Megatron style). No
    backward pass, so nothing is kept across layers: a pipeline stage of many layers needs this
    once, and ``tp`` is the only parallelism that shrinks it.

    Parameters
    ----------
    tokens : int
        Tokens in the step (a prefill chunk, or one per decoding sequence).
    d_model, qkv_width, intermediate_size : int
        ``d``; ``(h + 2 h_kv) d_h``; ``d_ff``. ``qkv_width`` and ``intermediate_size`` must divide by ``tp``.
    tp : int
        Tensor-parallel degree.
    bytes_per_element : int
        2 for bf16.

    Returns
    -------
    int
        ``bytes_per_element * tokens * (d_model + (qkv_width + 2 * intermediate_size) / tp)``.
    """
    for name, value in (("tokens", tokens), ("d_model", d_model), ("qkv_width", qkv_width),
                        ("intermediate_size", intermediate_size), ("tp", tp),
                        ("bytes_per_element", bytes_per_element)):
        check_positive_int(name, value)
    if qkv_width % tp or intermediate_size % tp:
        raise ValueError(f"tp ({tp}) must divide qkv_width ({qkv_width}) and intermediate_size "
                         f"({intermediate_size}): tensor parallelism splits them evenly")
    per_token = d_model + (qkv_width + 2 * intermediate_size) // tp  # elements per token on one GPU
    return bytes_per_element * tokens * per_token


def residual_window_cache_bytes(num_tokens, elements_per_token, nbits, residual_length=128, full_bytes=2):
    """Stored bytes of a quantized KV cache with a full-precision residual window (payload only).

    Hugging Face's ``QuantizedLayer`` keeps new tokens in the original precision until the window
    holds ``residual_length - 1`` of them; the next update quantizes the whole history and empties the
    window. So at most ``residual_length - 1`` tokens are full precision; this function takes the
    window as full, ``min(num_tokens, residual_length - 1)`` tokens, and the rest at ``nbits`` each.
    Scales and zero points (one pair per ``q_group_size`` values) are not counted.

    Parameters
    ----------
    num_tokens : int
        Tokens in the cache.
    elements_per_token : int
        Key and value elements per token over all layers, ``2 L h_kv d_h``.
    nbits : int
        2, 4 or 8.
    residual_length : int
        The window's capacity, 128 by default in transformers.
    full_bytes : int
        Bytes of one full-precision element (2 for bf16).

    Returns
    -------
    int
    """
    for name, value in (("num_tokens", num_tokens), ("elements_per_token", elements_per_token),
                        ("residual_length", residual_length), ("full_bytes", full_bytes)):
        check_positive_int(name, value)
    if nbits not in (2, 4, 8):
        raise ValueError(f"nbits must be 2, 4 or 8 (the backends' integer widths); got {nbits!r}")
    full = min(num_tokens, residual_length - 1)
    quantized = num_tokens - full
    return full * elements_per_token * full_bytes + (quantized * elements_per_token * nbits + 7) // 8


class EnginePool(NamedTuple):
    """The KV pool an engine builds at startup, and what it leaves of its memory base (bytes)."""

    pool_bytes: int  # becomes KV blocks
    spare_bytes: int  # base - weights - runtime - pool; negative: the process runs out of memory


ENGINE_POOL_RULES = ("vllm", "sglang", "tensorrt-llm")


def engine_kv_pool(engine, fraction, base_bytes, weight_bytes, runtime_bytes) -> EnginePool:
    """The KV pool ``engine`` sizes from ``fraction``, each engine by its own rule.

    * ``"vllm"``, ``gpu_memory_utilization``: a share of the device total that holds the weights,
      the profiled activations and CUDA graphs, and the pool: ``f * base - weights - runtime``.
    * ``"sglang"``, ``--mem-fraction-static``: a share of the memory free before the weights load
      that holds the weights and the pool only, ``f * base - weights``; the activations and CUDA graphs
      must fit in the ``(1 - f) * base`` left outside (``profile_max_num_token``:
      ``rest = available_after_load - base * (1 - f)``).
    * ``"tensorrt-llm"``, ``free_gpu_memory_fraction``: a share of what is free after the weights and
      the profiled peak, ``f * (base - weights - runtime)`` (``KvCacheCreator._cal_max_memory``).

    Parameters
    ----------
    engine : {"vllm", "sglang", "tensorrt-llm"}
    fraction : float
        The engine's fraction, ``0 < fraction <= 1``.
    base_bytes : int
        The memory the fraction applies to: the device total (vLLM, TensorRT-LLM); for SGLang the
        memory free just before the weights load (about the total on an otherwise empty GPU).
    weight_bytes, runtime_bytes : int
        The weights; the activations, CUDA graphs and workspaces a step needs.

    Returns
    -------
    EnginePool
        ``pool_bytes`` (ValueError if not positive: the engine refuses to start) and ``spare_bytes``.
    """
    if engine not in ENGINE_POOL_RULES:
        raise ValueError(f"engine must be one of {ENGINE_POOL_RULES}, got {engine!r}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    for name, value in (("base_bytes", base_bytes), ("weight_bytes", weight_bytes)):
        check_positive_int(name, value)
    if not isinstance(runtime_bytes, int) or runtime_bytes < 0:
        raise ValueError(f"runtime_bytes must be a non-negative int, got {runtime_bytes!r}")
    if engine == "vllm":
        pool = int(fraction * base_bytes) - weight_bytes - runtime_bytes
    elif engine == "sglang":
        pool = int(fraction * base_bytes) - weight_bytes  # activations live outside the fraction
    else:
        pool = int(fraction * (base_bytes - weight_bytes - runtime_bytes))
    if pool <= 0:
        raise ValueError(f"{engine} at fraction {fraction}: weights ({weight_bytes}) and runtime "
                         f"({runtime_bytes}) leave no KV pool in {base_bytes} bytes")
    return EnginePool(pool, base_bytes - weight_bytes - runtime_bytes - pool)
