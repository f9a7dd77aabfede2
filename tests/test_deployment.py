"""plan_deployment: weights and cache per GPU, what fits, and the floors, worked by hand.

Llama 3 70B on one 8-GPU H100 SXM node, tensor parallel 8, 8K context, bf16 (the H100 datasheet's
80 GB and 3.35 TB/s; NVLink 4 at 450 GB/s each way; the parameter count of tests/test_presets.py).
"""
import math

import pytest

import mha_kit as mk

LLAMA_PARAMS = 2 * 128256 * 8192 + 80 * ((2 * 8192 * 64 + 2 * 8192 * 8) * 128 + 3 * 8192 * 28672 + 2 * 8192) + 8192
EMBED = 128256 * 8192


def _plan(**kw):
    args = dict(num_gpus=8, tp=8, context_len=8192, batch_size=32)
    return mk.plan_deployment("llama-3-70b", "h100-sxm", **{**args, **kw})


def test_weights_and_cache_per_gpu():
    plan = _plan()
    assert plan.weight_bytes_per_gpu == -(-LLAMA_PARAMS * 2 // 8)
    assert plan.kv_bytes_per_sequence_per_gpu == 8192 * 80 * 2 * 1 * 128 * 2  # one KV head per GPU
    assert plan.max_sequences == (80 * 10**9 - plan.weight_bytes_per_gpu) // plan.kv_bytes_per_sequence_per_gpu
    assert plan.max_sequences == 185 and plan.fits and plan.replicas == 1


def test_decode_floor_by_hand():
    plan = _plan(batch_size=1)
    read = (LLAMA_PARAMS - EMBED) * 2 / 8 + 8192 * 80 * 2 * 128 * 2  # weights but the embedding table, one cache
    all_reduce = 2 * 80 * (2 * 7 * 1024 * 2) / 450e9  # two per layer, (1, 8192) bf16 over 8 GPUs
    assert plan.decode_step_s == pytest.approx(read / 3.35e12 + all_reduce, rel=1e-12)
    assert plan.tpot_s == plan.decode_step_s and plan.decode_bound == "memory"
    assert plan.tokens_per_s_per_gpu == pytest.approx(1 / plan.decode_step_s / 8)


def test_batch_raises_throughput_more_than_latency():
    one, many = _plan(batch_size=1), _plan(batch_size=64)
    assert many.decode_step_s > one.decode_step_s
    assert many.tokens_per_s_per_gpu > 20 * one.tokens_per_s_per_gpu  # the weights are read once for all


def test_prefill_is_compute_bound_and_counts_causal_attention():
    plan = _plan()
    matmul = 2 * (LLAMA_PARAMS - 2 * EMBED) * 8192 + 2 * EMBED  # logits of the last token only
    attention = 2 * 80 * (2 * 64 * 8192 * 8192 * 128) // 2
    all_reduce = 2 * 80 * (2 * 7 * (8192 * 8192 // 8) * 2) / 450e9
    assert plan.prefill_s == pytest.approx((matmul + attention) / 8 / 989e12 + all_reduce, rel=1e-12)


def test_too_long_a_context_does_not_fit():
    plan = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=131072, batch_size=16)
    assert plan.max_sequences == 11 and not plan.fits


def test_weights_that_do_not_fit_one_gpu():
    plan = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=1, tp=1, context_len=1024, batch_size=1)
    assert plan.weight_bytes_per_gpu > 80 * 10**9 and plan.max_sequences == 0 and not plan.fits


def test_fp8_weights_halve_the_weight_bytes():
    assert _plan(weight_fmt="fp8").weight_bytes_per_gpu == -(-LLAMA_PARAMS // 8)


def test_mla_cache_is_whole_on_every_rank_in_the_plan():
    plan = mk.plan_deployment("deepseek-v3", "h200-sxm", num_gpus=8, tp=8, context_len=8192, batch_size=1,
                              weight_fmt="fp8")
    assert plan.kv_bytes_per_sequence_per_gpu == 8192 * 61 * (512 + 64) * 2
    assert plan.weight_bytes_per_gpu == -(-671 * 10**9 // 8) and plan.fits


def test_moe_decode_reads_more_experts_with_a_larger_batch():
    small = mk.plan_deployment("deepseek-v3", "h200-sxm", num_gpus=8, tp=8, context_len=4096, batch_size=1,
                               weight_fmt="fp8")
    large = mk.plan_deployment("deepseek-v3", "h200-sxm", num_gpus=8, tp=8, context_len=4096, batch_size=32,
                               weight_fmt="fp8")
    weights_small = (mk.params_read_per_step(mk.MODEL_FACTS["deepseek-v3"], 1) - 129280 * 7168) / 8
    assert small.decode_step_s > weights_small / 4.8e12
    assert large.decode_step_s > 10 * small.decode_step_s  # 163 experts a layer instead of 8


@pytest.mark.parametrize("kw, message", [
    (dict(num_gpus=12, tp=8), r"num_gpus \(12\) must be a multiple of tp \(8\)"),
    (dict(tp=3, num_gpus=3), r"tp \(3\) must divide num_heads \(64\)"),
    (dict(link="carrier-pigeon"), r"unknown link 'carrier-pigeon'"),
    (dict(batch_size=0), r"batch_size must be a positive integer"),
])
def test_bad_plans_name_the_rule(kw, message):
    with pytest.raises(ValueError, match=message):
        _plan(**kw)


def test_unknown_model_and_gpu():
    with pytest.raises(ValueError, match=r"unknown model 'llama-9'"):
        mk.plan_deployment("llama-9", "h100-sxm", num_gpus=1, tp=1, context_len=1, batch_size=1)
    with pytest.raises(ValueError, match=r"unknown gpu 'b200'"):
        mk.plan_deployment("llama-3-8b", "b200", num_gpus=1, tp=1, context_len=1, batch_size=1)


def test_fleet_estimate_by_hand():
    plan = _plan(batch_size=64)
    fleet = mk.fleet_estimate(plan, rate=20.0, output_tokens=500, price_per_gpu_hour=2.0)
    in_flight = 20.0 * (plan.prefill_s + 500 * plan.decode_step_s)
    assert fleet.in_flight == pytest.approx(in_flight, rel=1e-15)
    assert fleet.replicas == math.ceil(in_flight / 64 + 20.0 * plan.prefill_s)
    assert fleet.gpus == 8 * fleet.replicas
    assert fleet.output_cost_per_million == pytest.approx(1e6 * 8 * 2.0 / 3600 * plan.decode_step_s / 64)
    assert fleet.input_cost_per_million == pytest.approx(1e6 * 8 * 2.0 / 3600 * plan.prefill_s / 8192)
    assert fleet.output_cost_per_million > fleet.input_cost_per_million  # a decode step makes 64 tokens


def test_fleet_estimate_rules():
    with pytest.raises(ValueError, match=r"rate must be a positive number, got 0"):
        mk.fleet_estimate(_plan(), rate=0, output_tokens=10, price_per_gpu_hour=1.0)
    with pytest.raises(ValueError, match=r"expected a DeploymentPlan"):
        mk.fleet_estimate({}, rate=1.0, output_tokens=10, price_per_gpu_hour=1.0)


def test_fp8_weights_run_their_products_at_twice_the_bf16_peak():
    # H100 datasheet: FP8 3,958 against BF16 1,979 TFLOPS (with sparsity): an FP8 prefill's weight products
    # take half the time, attention over a bf16 cache keeps the bf16 rate
    plan = _plan(weight_fmt="fp8")
    matmul = 2 * (LLAMA_PARAMS - 2 * EMBED) * 8192 + 2 * EMBED
    attention = 2 * 80 * (2 * 64 * 8192 * 8192 * 128) // 2
    all_reduce = 2 * 80 * (2 * 7 * (8192 * 8192 // 8) * 2) / 450e9
    expected = (matmul / (2 * 989e12) + attention / 989e12) / 8 + all_reduce
    assert plan.prefill_s == pytest.approx(expected, rel=1e-12)
    both = _plan(weight_fmt="fp8", kv_fmt="fp8")
    assert both.prefill_s == pytest.approx((matmul + attention) / (2 * 989e12) / 8 + all_reduce, rel=1e-12)
    assert mk.EIGHT_BIT_SPEEDUP == 2


def test_a_link_record_sets_the_all_reduce_rate():
    # two nodes' ring all-reduce crossing on all eight 400 Gb/s ports of a node: 8 x 50 GB/s
    ports = mk.Link(name="ib-ndr-x8", title="eight NDR ports", cite="nvidiadgxh100", source="test",
                    bytes_per_s=8 * 50e9)
    base = mk.plan_deployment("deepseek-v3", "h100-sxm", num_gpus=16, tp=16, context_len=2000, batch_size=1,
                              weight_fmt="fp8", link="ib-ndr")
    fast = mk.plan_deployment("deepseek-v3", "h100-sxm", num_gpus=16, tp=16, context_len=2000, batch_size=1,
                              weight_fmt="fp8", link=ports)
    sent = 2 * 61 * (2 * 15 * (2000 * 7168 // 16) * 2)  # bytes per GPU: two ring all-reduces a layer, bf16
    assert base.prefill_s - fast.prefill_s == pytest.approx(sent / 50e9 - sent / 400e9, rel=1e-9)
    with pytest.raises(ValueError, match="unknown link 'nvlink9'"):
        mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=8, batch_size=1, link="nvlink9")


def test_decode_memory_floor_by_hand():
    step, rate = mk.decode_memory_floor(mk.MODEL_FACTS["llama-3-70b"], "h100-sxm", 8, 8192, 32)
    expected = (2 * LLAMA_PARAMS / 8 + 32 * 8192 * 80 * 2 * 128 * 2) / 3.35e12  # every weight, embeddings too
    assert step == pytest.approx(expected, rel=1e-15) and rate == pytest.approx(32 / expected / 8, rel=1e-15)
    assert mk.cache_crossover_batch(mk.MODEL_FACTS["llama-3-70b"], 8, 8192) == -(-2 * LLAMA_PARAMS // (8 * 8192 * 80 * 2 * 128 * 2))


def test_gpus_for_rate_by_hand():
    facts, gpu = mk.MODEL_FACTS["llama-3-70b"], mk.GPUS["h100-sxm"]
    share, per_sequence = 2 * LLAMA_PARAMS / 8, 2500 * 80 * 2 * 128 * 2
    plan = mk.gpus_for_rate(facts, gpu, 8, 2500, 40.0, 500, 0.02)
    assert plan.batch_by_time == int((0.02 * 3.35e12 - share) // per_sequence)
    assert plan.batch_by_memory == int((80e9 - share) // per_sequence)
    assert plan.batch == min(plan.batch_by_time, plan.batch_by_memory)
    tpot = (share + plan.batch * per_sequence) / 3.35e12
    assert plan.tpot_s == pytest.approx(tpot, rel=1e-15)
    assert plan.gpus == math.ceil(40.0 * 500 * tpot / plan.batch) * 8
    with pytest.raises(ValueError, match=r"no batch meets the target"):
        mk.gpus_for_rate(facts, gpu, 8, 2500, 40.0, 500, 0.001)
