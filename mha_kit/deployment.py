"""Plan a deployment: weights and cache per GPU, what fits, and the roofline floors of a step.

Every time here is a **floor**: the least a step can take on the GPU's peak rates (HBM bandwidth,
dense tensor-core FLOP/s: bf16, or twice that for matrix products whose operands are 8-bit, as the
H100 and H200 datasheets give FP8 and INT8 at twice BF16) plus the tensor-parallel all-reduces at the
link's peak, ring algorithm, not overlapped with compute and without their fixed per-call latency.
A real server runs above it (kernels below peak, all-reduce latency, scheduling, sampling); the plan
says what bounds each step and how far levers move the floors, which is what the system round of an
interview asks. Mixtures of experts are read under uniform routing (:func:`mha_kit.experts_touched`).

>>> import mha_kit as mk
>>> plan = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=8192, batch_size=32)
>>> plan.fits, plan.max_sequences
(True, 185)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .config import check_positive_int, renamed_keyword
from .counting import attention_macs, dense_decoder_params, model_params
from .hardware import GPUS, LINKS, Accelerator, Link
from .models import MODEL_FACTS, ModelFacts
from .moe import params_read_per_step
from .parallel import all_reduce_bytes_per_gpu, kv_cache_bytes_per_gpu
from .units import dtype_bits, elements_to_bytes


@dataclass(frozen=True)
class DeploymentPlan:
    """One replica of ``tp`` GPUs serving ``batch_size`` sequences of ``context_len`` tokens.

    Bytes are per GPU; seconds are roofline floors (see the module's docstring).
    """

    model: str  # key of MODEL_FACTS
    gpu: str  # key of GPUS
    num_gpus: int  # GPUs in the deployment: num_gpus / tp replicas
    tp: int  # tensor-parallel degree of one replica
    context_len: int  # tokens per sequence (prompt + output so far)
    batch_size: int  # sequences decoding together in one replica
    weight_bytes_per_gpu: int  # the model's weights / tp
    kv_bytes_per_sequence_per_gpu: int  # one sequence's cache at context_len, this GPU's share
    max_sequences: int  # sequences of context_len whose cache fits beside the weights (0 if none)
    fits: bool  # the weights fit and batch_size <= max_sequences
    decode_step_s: float  # floor of one decode step = time per output token (TPOT)
    decode_bound: str  # "memory" or "compute": what bounds the step's GPU work
    prefill_s: float  # floor of one context_len-token prefill alone on the replica (time to first token)
    tokens_per_s_per_gpu: float  # decode: batch_size / decode_step_s / tp

    @property
    def tpot_s(self) -> float:
        """Time per output token: one decode step, every sequence of the batch gains a token."""
        return self.decode_step_s

    @property
    def replicas(self) -> int:
        """Independent copies of the model: ``num_gpus / tp``."""
        return self.num_gpus // self.tp


def _resolve(model, gpu):
    facts = MODEL_FACTS.get(model) if isinstance(model, str) else model
    if not isinstance(facts, ModelFacts):
        raise ValueError(f"unknown model {model!r}; known: {', '.join(MODEL_FACTS)}")
    chip = GPUS.get(gpu) if isinstance(gpu, str) else gpu
    if not isinstance(chip, Accelerator):
        raise ValueError(f"unknown gpu {gpu!r}; known: {', '.join(GPUS)}")
    return facts, chip


def _embedding_params(facts):
    """``V * d``: the input embedding table (a lookup, read a row a token), and as large, the output head."""
    return (facts.vocab_size or 0) * facts.config.d_model


#: Tensor-core speed of 8-bit operands against bf16: the H100 and H200 SXM datasheets give FP8 and INT8
#: at 3,958 against BF16 at 1,979 TFLOPS (both with sparsity; dense is half of each).
EIGHT_BIT_SPEEDUP = 2


def _matmul_rate(chip, fmt):
    """Peak FLOP/s of matrix products on ``fmt`` operands: 8-bit at twice bf16, anything else at bf16."""
    return chip.bf16_flops * (EIGHT_BIT_SPEEDUP if dtype_bits(fmt) == 8 else 1)


def _step_seconds(facts, chip, tp, tokens, logit_tokens, attention_flops, read_bytes, link, fmts):
    """``(seconds, bound)``: max(bytes / bandwidth, FLOPs / peak) per GPU, plus two all-reduces a layer.

    FLOPs: ``2 * (active - 2 V d)`` per token for the layers' weights, ``2 V d`` per token whose
    logits are computed (every token of a decode step, the last one of a prefill), and attention;
    the weights' products at the rate of ``fmts[0]``, attention's at that of ``fmts[1]``.
    """
    layers = params_read_per_step(facts, 1) - 2 * _embedding_params(facts)  # one token's layer weights
    matmul = 2 * layers * tokens + 2 * _embedding_params(facts) * logit_tokens
    compute_s = (matmul / _matmul_rate(chip, fmts[0]) + attention_flops / _matmul_rate(chip, fmts[1])) / tp
    memory_s = read_bytes / chip.hbm_bandwidth
    comm = 0.0 if tp == 1 else 2 * facts.config.num_layers * all_reduce_bytes_per_gpu(
        tokens * facts.config.d_model, tp) / link.bytes_per_s
    return max(memory_s, compute_s) + comm, "memory" if memory_s >= compute_s else "compute"


def _weights_read(facts, tokens, weight_bytes, tp):
    """Bytes of weights one GPU reads in a step over ``tokens`` tokens (the embedding table: not at all)."""
    return (params_read_per_step(facts, tokens) - _embedding_params(facts)) * weight_bytes / tp


@renamed_keyword("weight_dtype", "weight_fmt")
@renamed_keyword("kv_dtype", "kv_fmt")
def plan_deployment(model, gpu, *, num_gpus, tp, context_len, batch_size, weight_fmt="bf16", kv_fmt="bf16",
                    link="nvlink4") -> DeploymentPlan:
    """Plan ``num_gpus`` GPUs as replicas of ``tp`` serving ``batch_size`` sequences of ``context_len``.

    Decode step floor per GPU: the weights it reads (MoE: the experts the batch's tokens touch,
    :func:`mha_kit.params_read_per_step`) plus the batch's cache at ``context_len``, over HBM
    bandwidth, or the step's FLOPs over the peak if larger; plus two all-reduces of ``(batch, d)``
    per layer over ``link`` (a key of :data:`mha_kit.LINKS`, or a :class:`mha_kit.Link` whose rate
    is what each GPU's share of a ring all-reduce moves at). Prefill floor: one ``context_len``
    prompt, the same way. MLA is counted in its absorbed form in decode and its naive form in
    prefill (:func:`mha_kit.attention_macs`). An 8-bit ``weight_fmt`` means 8-bit matrix products
    (W8A8, as FP8 checkpoints run on Hopper), at twice the bf16 peak; an 8-bit ``kv_fmt`` runs
    attention at that rate too.

    Book: part "Serving at scale", chapter "Plan a deployment".
    """
    facts, chip = _resolve(model, gpu)
    n_gpu, t = check_positive_int("num_gpus", num_gpus), check_positive_int("tp", tp)
    s, b = check_positive_int("context_len", context_len), check_positive_int("batch_size", batch_size)
    if n_gpu % t:
        raise ValueError(f"num_gpus ({n_gpu}) must be a multiple of tp ({t}): each replica has tp GPUs")
    wire = LINKS.get(link) if isinstance(link, str) else link
    if not isinstance(wire, Link):
        raise ValueError(f"unknown link {link!r}; known: {', '.join(LINKS)}, or a Link record")
    cfg, weight_bytes = facts.config, dtype_bits(weight_fmt) / 8
    weights = math.ceil(model_params(facts) * weight_bytes / t)
    per_seq = kv_cache_bytes_per_gpu(cfg, s, t, fmt=kv_fmt)
    free = chip.hbm_bytes - weights
    max_seq = max(free // per_seq, 0)
    decode_read = _weights_read(facts, b, weight_bytes, t) + b * per_seq  # and the whole cache of the batch
    decode_attention = 2 * cfg.num_layers * attention_macs(cfg, s) * b
    fmts = (weight_fmt, kv_fmt)  # W8A8 with FP8 weights; attention at the cache's precision
    decode_s, bound = _step_seconds(facts, chip, t, b, b, decode_attention, decode_read, wire, fmts)
    prefill_read = _weights_read(facts, s, weight_bytes, t) + per_seq  # and the cache it writes
    prefill_attention = 2 * cfg.num_layers * attention_macs(cfg, s, num_queries=s, form="naive") // 2  # causal
    prefill_s, _ = _step_seconds(facts, chip, t, s, 1, prefill_attention, prefill_read, wire, fmts)
    return DeploymentPlan(
        model=facts.name, gpu=chip.name, num_gpus=n_gpu, tp=t, context_len=s, batch_size=b,
        weight_bytes_per_gpu=weights, kv_bytes_per_sequence_per_gpu=per_seq, max_sequences=int(max_seq),
        fits=free > 0 and b <= max_seq, decode_step_s=decode_s, decode_bound=bound, prefill_s=prefill_s,
        tokens_per_s_per_gpu=b / decode_s / t)


@dataclass(frozen=True)
class FleetEstimate:
    """Little's law over one plan: requests in flight, replicas, GPUs, and the cost of a token."""

    in_flight: float  # L = rate * (prefill + output_tokens * TPOT), requests decoding or prefilling at once
    replicas: int  # ceil(L / batch + rate * prefill): decode slots, plus the replicas busy prefilling
    gpus: int  # replicas * tp
    output_cost_per_million: float  # dollars per million output tokens at the decode floor
    input_cost_per_million: float  # dollars per million prompt tokens at the prefill floor


def fleet_estimate(plan, *, rate, output_tokens, price_per_gpu_hour) -> FleetEstimate:
    """GPUs and cost for ``rate`` requests/s of a ``plan.context_len``-token prompt and ``output_tokens`` out.

    Little's law, ``L = rate * W`` with ``W = prefill + output_tokens * TPOT`` (both floors), gives
    the requests in flight; each replica decodes ``plan.batch_size`` of them and spends
    ``rate * prefill`` of its time on prompts. A decode step of ``tp`` GPUs makes ``batch_size``
    tokens; a prefill makes ``context_len``. The prompt is taken as long as the plan's context: an
    upper bound on its prefill.

    Book: chapter "Plan a deployment"; the deployment planner.
    """
    if not isinstance(plan, DeploymentPlan):
        raise ValueError(f"expected a DeploymentPlan (mk.plan_deployment), got {type(plan).__name__}")
    for name, value in (("rate", rate), ("price_per_gpu_hour", price_per_gpu_hour)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise ValueError(f"{name} must be a positive number, got {value!r}")
    out = check_positive_int("output_tokens", output_tokens)
    in_flight = rate * (plan.prefill_s + out * plan.decode_step_s)
    replicas = math.ceil(in_flight / plan.batch_size + rate * plan.prefill_s)
    per_second = plan.tp * price_per_gpu_hour / 3600  # dollars per second of one replica
    return FleetEstimate(in_flight=in_flight, replicas=replicas, gpus=replicas * plan.tp,
                         output_cost_per_million=1e6 * per_second * plan.decode_step_s / plan.batch_size,
                         input_cost_per_million=1e6 * per_second * plan.prefill_s / plan.context_len)


@renamed_keyword("weight_bits", "weight_fmt")
def decode_memory_floor(facts, gpu, tp, context_len, batch_size, weight_fmt="bf16") -> tuple:
    """``(tpot_s, tokens_per_s_per_gpu)`` of the simplest decode floor, the one an interview asks first.

    Each GPU reads its ``1/tp`` share of every weight of a dense model (:func:`mha_kit.dense_decoder_params`,
    embeddings included) and the cache of every sequence of the batch, once a step, over HBM bandwidth;
    compute and the all-reduces are left out. The weights are stored in ``weight_fmt`` (a format name
    or a number of bits), the cache in bf16. :func:`plan_deployment` refines it.

    Book: chapter "Plan a deployment"; exercise 13, Q2.
    """
    chip = GPUS.get(gpu) if isinstance(gpu, str) else gpu
    if not isinstance(chip, Accelerator):
        raise ValueError(f"unknown gpu {gpu!r}; known: {', '.join(GPUS)}")
    t, b = check_positive_int("tp", tp), check_positive_int("batch_size", batch_size)
    weights = elements_to_bytes(dense_decoder_params(facts), weight_fmt) / t
    step = (weights + b * kv_cache_bytes_per_gpu(facts.config, context_len, t)) / chip.hbm_bandwidth
    return step, b / step / t


def cache_crossover_batch(facts, tp, context_len, weight_fmt="bf16") -> int:
    """Smallest batch whose cache per GPU reaches that GPU's share of a dense model's weights.

    Weights in ``weight_fmt`` (a format name or a number of bits), the cache in bf16.

    Book: chapter "Plan a deployment"; exercise 13, Q3.
    """
    t = check_positive_int("tp", tp)
    per_sequence = kv_cache_bytes_per_gpu(facts.config, context_len, t)
    return -(-elements_to_bytes(dense_decoder_params(facts), weight_fmt) // (t * per_sequence))


@dataclass(frozen=True)
class RateFleet:
    """The steps of :func:`gpus_for_rate`, for a reader (and a grader) to follow."""

    batch_by_time: int  # the largest batch whose decode_memory_floor meets the TPOT target
    batch_by_memory: int  # the most sequences whose caches fit beside the weights
    batch: int  # the smaller of the two
    tpot_s: float  # decode_memory_floor at that batch
    in_flight: float  # Little's law: rate * output_tokens * tpot_s
    gpus: int  # ceil(in_flight / batch) replicas of tp GPUs


def gpus_for_rate(facts, gpu, tp, context_len, rate, output_tokens, tpot_target) -> RateFleet:
    """GPUs for ``rate`` requests/s of ``output_tokens`` each, at a decode floor within ``tpot_target``.

    The batch is the largest the target allows (:func:`decode_memory_floor`) or the memory holds,
    whichever is smaller; each request stays ``output_tokens`` steps of that floor; Little's law gives
    the requests in flight and whole replicas of ``tp`` GPUs hold them. Dense model, bf16 weights and
    cache, decode only.

    Book: chapter "Plan a deployment"; exercise 13, Q6.
    """
    chip = GPUS.get(gpu) if isinstance(gpu, str) else gpu
    t = check_positive_int("tp", tp)
    share = elements_to_bytes(dense_decoder_params(facts), 16) / t
    per_sequence = kv_cache_bytes_per_gpu(facts.config, context_len, t)
    by_time = int((tpot_target * chip.hbm_bandwidth - share) // per_sequence)
    by_memory = int((chip.hbm_bytes - share) // per_sequence)
    batch = min(by_time, by_memory)
    if batch < 1:
        raise ValueError(f"no batch meets the target: {tpot_target} s per token allows {by_time} sequence(s) "
                         f"and the memory {by_memory}")
    tpot = decode_memory_floor(facts, chip, t, context_len, batch)[0]
    in_flight = rate * check_positive_int("output_tokens", output_tokens) * tpot
    return RateFleet(by_time, by_memory, batch, tpot, in_flight, math.ceil(in_flight / batch) * t)
