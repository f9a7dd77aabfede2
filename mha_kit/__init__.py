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
from .flash import flash_decoding, flash_decoding_partials, merge_softmax_states, split_bounds
from .hardware import GPUS, Accelerator
from .hybrid import hybrid_cache_bytes, layout_kv_bytes, linear_state_bytes
from .kernels import (DecodeBytes, LoopIO, TileCounts, causal_tiles, decode_work_items, flash_decoding_bytes,
                      flash_loop_io, split_kv_heuristic, wave_efficiency)
from .hardware import LINKS, NODES, Link, Node
from .models import MODEL_FACTS, PRESETS, ModelFacts, get_model_facts, get_preset
from .models import LAYER_LAYOUTS, LayerLayout
from .numerics import (FLOAT_FORMATS, FloatFormat, attention_entropy, rms_norm, round_to_format, running_sum,
                       soft_cap, soft_cap_grad, softmax_in_format, storage_dtype)
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
    kv_weight_crossover_tokens,
    layer_bytes,
    layer_flops,
    layer_intensity,
    max_context_tokens,
    model_params,
    projection_macs,
    projection_params,
    projection_params_by_matrix,
    qkvo_bytes,
    score_count,
    score_matrix_bytes,
    sequence_attention_macs,
    standard_attention_io,
)
from .linear_attention import LINEAR_FORMS, elu_feature_map, linear_attention, linear_attention_state
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
from .positions import alibi_bias, alibi_slopes
from .rope_scaling import rope_inv_freq, stretch_per_pair, yarn_mscale
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
from .sinks import SinkCache, sink_decode_step, sink_mask, sink_softmax
from .prefix_cache import (ROUTING_POLICIES, PrefixBlockCache, RadixPrefixCache, computed_tokens, hit_rates_by_capacity,
                           route_requests, serve_stream)
from .quantization import KV_FORMAT_MAX, SCALE_AXES, attention_error, kv_scale_count, quantize_kv, quantize_kv_codes
from .disaggregation import kv_transfer_seconds, prefill_flops, prefill_seconds
from . import roofline  # the roofline model of a decode step: mk.roofline.*
from .scheduling import (BatchStep, LatencySummary, RequestLatency, RooflineStep, batching_steps, roofline_step,
                         simulate_batching, summarize_latencies)
from .speculative import rollback_cache, speculative_expected_tokens, speculative_speedup, speculative_step
from .units import (DTYPE_BITS, dtype_bits, elements_to_bytes, format_bytes, format_difference, format_int,
                    format_percent)
from .weights import TOY_SEED, AttentionWeights, init_weights, toy_example

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
