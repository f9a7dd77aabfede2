"""mha_kit: multi-head attention in NumPy, and the counting behind every number in the book.

>>> import mha_kit as mk
>>> cfg = mk.PRESETS["llama-3-70b"]
>>> mk.format_bytes(mk.kv_cache_bytes_per_token(cfg))
'320 KiB'
"""
from .attention import (
    causal_mask,
    grouped_attention,
    masked_softmax,
    mean_pool_kv_heads,
    merge_heads,
    multi_head_attention,
    padding_mask,
    scaled_dot_product_attention,
    sliding_window_mask,
    softmax,
    split_heads,
    value_output_matrices,
)
from .cache import KVCache, cached_attention, decode_attention
from .config import AttentionConfig, LatentAttentionConfig
from .heads import (
    HeadShard,
    fuse_qkv,
    head_scores,
    kv_cache_bytes_per_device,
    kv_replication,
    shard_heads,
    split_qkv,
    tensor_parallel_attention,
)
from .flash import flash_attention, online_softmax_update
from .hardware import GPUS, Accelerator
from .models import MODEL_FACTS, PRESETS, ModelFacts, get_model_facts, get_preset
from .counting import (
    arithmetic_intensity,
    attention_macs,
    cache_reduction,
    crossover_length,
    dense_decoder_params,
    flash_attention_io,
    flash_block_sizes,
    flash_io_break_even,
    kv_bytes_read,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    kv_elements_per_token,
    layer_bytes,
    layer_flops,
    layer_intensity,
    max_context_tokens,
    projection_macs,
    projection_params,
    projection_params_by_matrix,
    qkvo_bytes,
    score_count,
    score_matrix_bytes,
    sequence_attention_macs,
    standard_attention_io,
)
from .latent import (
    LatentCache,
    LatentWeights,
    init_latent_weights,
    latent_attention,
    latent_cached_attention,
    latent_decode_attention,
    latent_decode_step,
)
from .positions import rope, rope_scores, rotary_attention, sinusoidal_positions
from .serving import (
    BlockPool,
    CacheSlots,
    PagedKVCache,
    RollingKVCache,
    cache_slots,
    dequantize_per_head,
    quantize_per_head,
    quantized_cache_bytes,
    rolling_cached_attention,
    shared_prefix_blocks,
)
from . import roofline  # the roofline model of a decode step: mk.roofline.*
from .units import DTYPE_BITS, dtype_bits, elements_to_bytes, format_bytes, format_int, format_percent
from .weights import TOY_SEED, AttentionWeights, init_weights, toy_example

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
