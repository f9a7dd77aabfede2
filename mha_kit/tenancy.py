"""Many models, adapters and tenants on one fleet: LoRA bytes, cost curves, image tokens, fleet checks.

Each function is a small piece of arithmetic that the chapter "Many models, adapters and tenants"
applies to the records of :mod:`mha_kit.models` and :mod:`mha_kit.hardware` and to the floors of
:func:`mha_kit.plan_deployment`. Published figures the chapter checks (MLPerf's latency targets,
DeepSeek's one-day fleet statistics) are records here, each with where it was read.

>>> import mha_kit as mk
>>> mk.format_bytes(mk.lora_adapter_bytes(mk.MODEL_FACTS["llama-3-8b"], rank=16))
'26 MiB'
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .config import check_positive_int, check_positive_number
from .counting import projection_params_by_matrix
from .deployment import plan_deployment
from .models import ModelFacts
from .units import dtype_bits

#: LoRA targets of a Llama-style layer, the four attention projections and the three SwiGLU matrices.
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


def lora_matrix_shapes(facts) -> dict:
    """``{target: (in_features, out_features)}`` of each matrix of one layer that LoRA can adapt.

    Attention from the config (``q``: ``d -> h d_h``, ``k``/``v``: ``d -> h_kv d_h``, ``o``: ``h d_h -> d``),
    the SwiGLU feed-forward from ``intermediate_size`` (``gate``/``up``: ``d -> d_ff``, ``down``: ``d_ff -> d``).
    Dense models with standard attention only.

    Book: chapter "Many models, adapters and tenants".
    """
    if not isinstance(facts, ModelFacts) or facts.is_moe or facts.intermediate_size is None:
        raise ValueError(f"lora_matrix_shapes needs a dense ModelFacts record with intermediate_size, got "
                         f"{getattr(facts, 'name', facts)!r}")
    cfg, d_ff = facts.config, facts.intermediate_size
    d = cfg.d_model
    params = projection_params_by_matrix(cfg)  # raises ValueError for MLA
    shapes = {key: (d, params[key] // d) for key in ("q", "k", "v")}
    shapes["o"] = (params["o"] // d, d)
    shapes.update(gate=(d, d_ff), up=(d, d_ff), down=(d_ff, d))
    return shapes


def lora_adapter_bytes(facts, rank, targets=("q", "k", "v", "o"), fmt="bf16") -> int:
    """Bytes of one LoRA adapter: ``rank * (in + out)`` elements per adapted matrix, every layer.

    LoRA adds ``B A`` with ``A`` of shape ``(rank, in)`` and ``B`` of shape ``(out, rank)`` beside a
    frozen ``(out, in)`` weight (Hu et al. 2021, sec. 4.1), so each adapted matrix stores
    ``rank * (in + out)`` numbers in ``fmt``.

    Parameters
    ----------
    facts : ModelFacts
        A dense record (:func:`lora_matrix_shapes`).
    rank : int
    targets : sequence of str
        Keys of :data:`LORA_TARGETS`; the default adapts the four attention projections.
    fmt : str

    Book: chapter "Many models, adapters and tenants".
    """
    r = check_positive_int("rank", rank)
    shapes = lora_matrix_shapes(facts)
    unknown = [t for t in targets if t not in shapes]
    if unknown or not targets:
        raise ValueError(f"targets must be a non-empty subset of {LORA_TARGETS}, got {tuple(targets)!r}")
    per_layer = sum(r * (shapes[t][0] + shapes[t][1]) for t in targets)
    return facts.config.num_layers * per_layer * dtype_bits(fmt) // 8


def self_host_cost_per_million(price_per_gpu_hour, tokens_per_s_per_gpu, utilisation=1.0) -> float:
    """Dollars per million tokens of a GPU that makes ``tokens_per_s_per_gpu`` when busy.

    ``price / 3600 / (tokens_per_s * utilisation) * 1e6``: an idle hour is paid like a busy one, so
    the cost per token grows as ``1 / utilisation``.

    Book: chapter "Many models, adapters and tenants".
    """
    price = check_positive_number("price_per_gpu_hour", price_per_gpu_hour)
    rate = check_positive_number("tokens_per_s_per_gpu", tokens_per_s_per_gpu)
    if not 0 < utilisation <= 1:
        raise ValueError(f"utilisation must lie in (0, 1], got {utilisation!r}")
    return 1e6 * price / 3600 / (rate * utilisation)


def break_even_tokens_per_day(api_price_per_million, price_per_gpu_hour, min_gpus, tokens_per_s_per_gpu):
    """Daily token volume above which ``min_gpus`` rented all day cost less than an API's bill.

    Below the volume one minimum deployment can make, self-hosting costs a flat
    ``min_gpus * price * 24`` a day and the API ``volume * api_price``; they meet at
    ``min_gpus * price * 24 / api_price``. Returns ``None`` when even a fully busy GPU costs more
    per token than the API (no volume breaks even), and the volume otherwise (it may exceed what
    the minimum deployment makes, in which case more GPUs keep the same per-token cost).

    Book: chapter "Many models, adapters and tenants".
    """
    api = check_positive_number("api_price_per_million", api_price_per_million)
    gpus = check_positive_int("min_gpus", min_gpus)
    if self_host_cost_per_million(price_per_gpu_hour, tokens_per_s_per_gpu) >= api:
        return None
    return gpus * price_per_gpu_hour * 24 / api * 1e6


def largest_batch_within_tpot(model, gpu, *, tp, context_len, tpot_target, **kwargs):
    """The largest batch whose :func:`mha_kit.plan_deployment` decode floor is within ``tpot_target``.

    The step floor grows with the batch (more cache to read, more FLOPs), so the batches are tried
    by bisection between 1 and the most sequences that fit. ``kwargs`` go to ``plan_deployment``
    (``weight_fmt``, ``kv_fmt``, ``link``). Returns the :class:`mha_kit.DeploymentPlan`, or raises
    ``ValueError`` when even one sequence misses the target or the weights do not fit.

    Book: chapter "Many models, adapters and tenants".
    """
    target = check_positive_number("tpot_target", tpot_target)

    def plan(b):
        return plan_deployment(model, gpu, num_gpus=tp, tp=tp, context_len=context_len, batch_size=b, **kwargs)

    most = plan(1).max_sequences
    if most < 1 or plan(1).decode_step_s > target:
        raise ValueError(f"no batch meets tpot_target={target} s: one sequence takes {plan(1).decode_step_s:.4f} s "
                         f"and {most} sequence(s) fit")
    low, high = 1, most  # plan(low) meets the target
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if plan(mid).decode_step_s <= target else (low, mid - 1)
    return plan(low)


def routed_cost(small_fraction, cost_small, cost_large, cascade=False) -> float:
    """Mean cost per request when a router sends ``small_fraction`` of requests to the small model.

    A router decides before generation: ``f * small + (1 - f) * large``. A cascade sends every
    request to the small model first and escalates the ``1 - f`` it is not confident about, which
    then pay for both: ``small + (1 - f) * large``.

    Book: chapter "Many models, adapters and tenants".
    """
    if not 0 <= small_fraction <= 1:
        raise ValueError(f"small_fraction must lie in [0, 1], got {small_fraction!r}")
    small, large = check_positive_number("cost_small", cost_small), check_positive_number("cost_large", cost_large)
    return (small if cascade else small_fraction * small) + (1 - small_fraction) * large


def qwen2_vl_image_tokens(height, width, *, patch_size=14, merge_size=2, min_pixels=56 * 56,
                          max_pixels=14 * 14 * 4 * 1280) -> int:
    """Tokens the language model of Qwen2-VL receives for one ``height x width`` image.

    The image is resized so that both sides are multiples of ``patch_size * merge_size`` (28 px)
    and its area lies in ``[min_pixels, max_pixels]`` (transformers' ``smart_resize`` of
    ``image_processing_qwen2_vl.py``, whose defaults these are); the ViT cuts 14-px patches, an MLP
    merges each 2 x 2 of them into one token, and ``<|vision_start|>``/``<|vision_end|>`` add two
    (Qwen2-VL arXiv:2409.12191 sec. 2.1: a 224 x 224 image gives 66 tokens).

    Book: chapter "Many models, adapters and tenants".
    """
    h, w = check_positive_int("height", height), check_positive_int("width", width)
    factor = check_positive_int("patch_size", patch_size) * check_positive_int("merge_size", merge_size)
    if h < factor or w < factor or max(h, w) / min(h, w) > 200:
        raise ValueError(f"height and width must be at least {factor} with aspect ratio at most 200, got {h} x {w}")
    h_bar, w_bar = round(h / factor) * factor, round(w / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        h_bar, w_bar = math.floor(h / beta / factor) * factor, math.floor(w / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        h_bar, w_bar = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return (h_bar // factor) * (w_bar // factor) + 2


def vllm_mm_profile_items(tokens_per_item, limit_per_prompt, max_model_len, max_num_seqs,
                          max_num_batched_tokens) -> tuple:
    """Items of one modality per prompt, and per encoder batch, that vLLM's start-up profile assumes.

    The encoder budget is the step's token budget raised to the largest item
    (``compute_mm_encoder_budget``); a prompt holds ``limit_per_prompt`` items, but no more than fit
    ``max_model_len`` and never fewer than one; the profiled encoder batch is as many worst-case items
    as the budget holds, at most ``max_num_seqs`` prompts' worth (``MultiModalBudget._get_max_items``,
    vllm/multimodal/encoder_budget.py, vLLM 0.34.0, chunked prefill on).

    Returns ``(items_per_prompt, items_per_batch)``, two ints; ``(0, 0)`` when the limit is 0.

    Book: chapter "Many models, adapters and tenants".
    """
    per_item = check_positive_int("tokens_per_item", tokens_per_item)
    seqs, budget = check_positive_int("max_num_seqs", max_num_seqs), max(
        check_positive_int("max_num_batched_tokens", max_num_batched_tokens), per_item)
    if not isinstance(limit_per_prompt, int) or limit_per_prompt < 0:
        raise ValueError(f"limit_per_prompt must be an int >= 0 (0 disables the modality), got {limit_per_prompt!r}")
    if limit_per_prompt == 0:
        return 0, 0
    per_prompt = max(1, min(limit_per_prompt, check_positive_int("max_model_len", max_model_len) // per_item))
    return per_prompt, max(1, min(budget // per_item, seqs * per_prompt))


def allreduce_latency_per_step(num_layers, tp, per_call_s) -> float:
    """Seconds one decode step spends on the fixed cost of its tensor-parallel all-reduces.

    Megatron-style tensor parallelism all-reduces each layer's output twice, after attention and
    after the MLP (Shoeybi et al. 2019, sec. 3), so a step makes ``2 * num_layers`` calls, each paying
    ``per_call_s`` however small its message; none at ``tp = 1``. :func:`mha_kit.plan_deployment`
    counts only their bytes.

    Book: chapter "Many models, adapters and tenants".
    """
    layers, t = check_positive_int("num_layers", num_layers), check_positive_int("tp", tp)
    if isinstance(per_call_s, bool) or not isinstance(per_call_s, (int, float)) or not 0 <= per_call_s < math.inf:
        raise ValueError(f"per_call_s must be a non-negative number of seconds, got {per_call_s!r}")
    return 0.0 if t == 1 else 2 * layers * per_call_s


def expert_slots_per_gpu(num_experts, redundant, ep) -> int:
    """Routed experts each of ``ep`` GPUs holds when ``redundant`` copies are added to ``num_experts``.

    DeepSeek's 2025 inference system: 256 routed + 32 redundant experts, 9 per GPU at EP32 and 2 at
    EP144 (open-infra-index, day 6 overview). Raises ``ValueError`` when they do not divide evenly.

    Book: chapter "Many models, adapters and tenants".
    """
    n, e = check_positive_int("num_experts", num_experts), check_positive_int("ep", ep)
    if isinstance(redundant, bool) or not isinstance(redundant, int) or redundant < 0:
        raise ValueError(f"redundant must be a non-negative integer, got {redundant!r}")
    if (n + redundant) % e:
        raise ValueError(f"num_experts + redundant ({n + redundant}) must be a multiple of ep ({e})")
    return (n + redundant) // e


@dataclass(frozen=True, kw_only=True)
class LatencyTarget:
    """A published latency constraint on one benchmark scenario, in seconds, with where it was read."""

    name: str  # key of LATENCY_TARGETS
    ttft_s: float  # time to first token, at the percentile
    tpot_s: float  # time per output token, at the percentile
    percentile: float  # the percentile (99: p99) of TTFT and of TPOT, each held under its own limit
    cite: str  # references.bib key
    source: str  # file and lines


_MLPERF = "mlcommons/inference loadgen/mlperf.conf (ttft_latency, tpot_latency in ms; *.Server percentile 99)"
_TARGETS = (
    LatencyTarget(name="llama2-70b", ttft_s=2.0, tpot_s=0.2, percentile=99, cite="mlperfconf", source=_MLPERF),
    LatencyTarget(name="llama2-70b-interactive", ttft_s=0.45, tpot_s=0.04, percentile=99, cite="mlperfconf",
                  source=_MLPERF),
    LatencyTarget(name="llama3_1-8b-interactive", ttft_s=0.5, tpot_s=0.03, percentile=99, cite="mlperfconf",
                  source=_MLPERF),
    LatencyTarget(name="deepseek-r1-interactive", ttft_s=1.5, tpot_s=0.015, percentile=99, cite="mlperfconf",
                  source=_MLPERF),
)

#: MLPerf Inference's server-scenario latency constraints, by benchmark name.
LATENCY_TARGETS = MappingProxyType({t.name: t for t in _TARGETS})


@dataclass(frozen=True, kw_only=True)
class FleetDay:
    """One day of a published inference fleet: tokens, nodes, prices; with where it was read."""

    input_tokens: float  # all prompt tokens of the day
    cache_hit_tokens: float  # prompt tokens served from the KV cache on disk
    output_tokens: float
    average_nodes: float  # nodes in service on average over the day
    peak_nodes: float  # nodes in service at the day's peak
    gpus_per_node: int
    price_per_gpu_hour: float  # the rental price the publisher assumed
    prefill_tokens_per_s_per_node: float  # input, cache hits included, while a node prefills
    decode_tokens_per_s_per_node: float  # output while a node decodes
    price_hit: float  # dollars per million input tokens found in the cache
    price_miss: float  # dollars per million input tokens not found
    price_output: float  # dollars per million output tokens
    cite: str
    source: str

    @property
    def cost(self) -> float:
        """Dollars for the day: average nodes x GPUs x price x 24 h."""
        return self.average_nodes * self.gpus_per_node * self.price_per_gpu_hour * 24

    @property
    def revenue(self) -> float:
        """Dollars if every token were billed at the listed prices (hits, misses, output)."""
        misses = self.input_tokens - self.cache_hit_tokens
        return (self.cache_hit_tokens * self.price_hit + misses * self.price_miss
                + self.output_tokens * self.price_output) / 1e6

    @property
    def node_days_needed(self) -> tuple:
        """``(prefill, decode)`` node-days the day's tokens take at the published per-node rates.

        The rates are day averages, so their sum returns the node count by construction: a check that
        the published figures agree with each other, not a measure of utilisation.
        """
        day = 86_400
        return (self.input_tokens / (self.prefill_tokens_per_s_per_node * day),
                self.output_tokens / (self.decode_tokens_per_s_per_node * day))


#: DeepSeek-V3/R1's online service, 27-28 February 2025 (UTC+8 noon to noon), H800 nodes.
DEEPSEEK_FLEET_DAY = FleetDay(
    input_tokens=608e9, cache_hit_tokens=342e9, output_tokens=168e9, average_nodes=226.75, peak_nodes=278,
    gpus_per_node=8,
    price_per_gpu_hour=2.0, prefill_tokens_per_s_per_node=73.7e3, decode_tokens_per_s_per_node=14.8e3,
    price_hit=0.14, price_miss=0.55, price_output=2.19, cite="deepseekinfra2025",
    source="deepseek-ai/open-infra-index 202502OpenSourceWeek/day_6_one_more_thing_deepseekV3R1_inference_system_"
           "overview.md, 'Statistics of DeepSeek's Online Service'")


@dataclass(frozen=True, kw_only=True)
class DeploymentUnit:
    """One unit of a disaggregated MoE deployment: nodes, expert parallelism, redundant experts."""

    phase: str  # "prefill" or "decode"
    nodes: int
    gpus_per_node: int
    ep: int  # routed experts spread over this many GPUs (attention and shared expert data-parallel)
    redundant_experts: int
    cite: str
    source: str

    @property
    def gpus(self) -> int:
        """GPUs in the unit: ``nodes * gpus_per_node``."""
        return self.nodes * self.gpus_per_node


_DS_UNITS = "deepseek-ai/open-infra-index day_6 overview, 'Large-scale Cross-node Expert Parallelism (EP)'"
#: DeepSeek-V3/R1's production units (February 2025): prefill EP32 on 4 nodes, decode EP144 on 18 nodes.
DEEPSEEK_UNITS = MappingProxyType({
    "prefill": DeploymentUnit(phase="prefill", nodes=4, gpus_per_node=8, ep=32, redundant_experts=32,
                              cite="deepseekinfra2025", source=_DS_UNITS),
    "decode": DeploymentUnit(phase="decode", nodes=18, gpus_per_node=8, ep=144, redundant_experts=32,
                             cite="deepseekinfra2025", source=_DS_UNITS),
})

#: ``max_pixels`` of the released Qwen2-VL checkpoints' ``preprocessor_config.json`` (Qwen/Qwen2-VL-7B-Instruct:
#: ``"min_pixels": 3136, "max_pixels": 12845056``), 16,384 merged tokens of 28 x 28 px; the processor class's own
#: default, which :func:`qwen2_vl_image_tokens` uses, is 1,280 such tokens (1,003,520 px).
QWEN2_VL_CHECKPOINT_MAX_PIXELS = 16_384 * 28 * 28

#: Parameters of Qwen2-VL's vision encoder, the same for its 2B, 7B and 72B models (Qwen2-VL arXiv:2409.12191
#: sec. 2.1, "a ViT with approximately 675 million parameters").
QWEN2_VL_VIT_PARAMS = 675_000_000

#: Adult silent reading of English non-fiction, words per minute (Brysbaert 2019, abstract; 260 for fiction).
SILENT_READING_WPM = 238

#: Words per token of English text for OpenAI's tokenizers, their rule of thumb (100 tokens ~ 75 words).
WORDS_PER_TOKEN = 0.75


def request_cost(prompt_tokens, cached_tokens, completion_tokens, *, input_per_million, output_per_million,
                 cached_input_per_million) -> float:
    """Cost of one request from its usage fields, in the currency of the prices (per million tokens).

    ``cached_tokens`` (vLLM and OpenAI: ``usage.prompt_tokens_details.cached_tokens``) is the part of
    ``prompt_tokens`` whose KV was found in the prefix cache; it is billed at ``cached_input_per_million``
    and the rest of the prompt at ``input_per_million``; generated tokens at ``output_per_million``.

    Book: chapter "Many models, adapters and tenants".
    """
    for name, v in (("prompt_tokens", prompt_tokens), ("cached_tokens", cached_tokens),
                    ("completion_tokens", completion_tokens)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be an int >= 0, got {v!r}")
    if cached_tokens > prompt_tokens:
        raise ValueError(f"cached_tokens ({cached_tokens}) cannot exceed prompt_tokens ({prompt_tokens})")
    p_in = check_positive_number("input_per_million", input_per_million)
    p_out = check_positive_number("output_per_million", output_per_million)
    p_cache = check_positive_number("cached_input_per_million", cached_input_per_million)
    fresh = prompt_tokens - cached_tokens
    return (fresh * p_in + cached_tokens * p_cache + completion_tokens * p_out) / 1e6


def max_load_d_choices(n_requests, n_servers, d, seed=0) -> int:
    """Largest count on one server after placing ``n_requests`` one by one, each on the least loaded of ``d``
    servers drawn at random (``d = 1``: random placement; ``d = 2``: the power of two choices).

    With ``n`` requests on ``n`` servers the maximum grows like ``log n / log log n`` for one choice and
    ``log log n / log d`` for ``d >= 2`` (Mitzenmacher 2001). Seeded, so the result is reproducible.

    Book: chapter "Many models, adapters and tenants".
    """
    n, m, d = (check_positive_int(k, v) for k, v in (("n_requests", n_requests), ("n_servers", n_servers), ("d", d)))
    if d > m:
        raise ValueError(f"d ({d}) choices cannot exceed n_servers ({m})")
    rng = np.random.default_rng(seed)
    load = np.zeros(m, dtype=np.int64)  # (n_servers,)
    picks = rng.integers(0, m, size=(n, d))  # (n_requests, d), with replacement
    for row in picks:
        j = row[np.argmin(load[row])]
        load[j] += 1
    return int(load.max())
