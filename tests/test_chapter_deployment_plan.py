"""Claims of book/deployment_plan.ipynb's table (both models on H100 and H200 nodes), recomputed by hand.

Products written out from the records' sources: DeepSeek-V3 (arXiv:2412.19437 sec. 4.2 and its config:
671B parameters, 61 layers, 58 of them MoE with 256 routed experts of width 2,048, top-8, d = 7,168,
vocabulary 129,280, an MLA cache of 512 + 64 numbers a token and layer), the H100 and H200 SXM
datasheets (80 and 141 GB; 3.35 and 4.8 TB/s; 989 TFLOPS dense bf16), NVLink 4 at 450 GB/s each way.
"""
import pytest

import mha_kit as mk

V3_PARAMS = 671 * 10**9
V3_EXPERT = 3 * 7168 * 2048
V3_EMBED = 129280 * 7168


def test_deepseek_v3_fp8_weights_fit_eight_h200s_but_not_eight_h100s():
    per_gpu = -(-V3_PARAMS // 8)  # one byte a parameter over 8 GPUs
    assert 80 * 10**9 < per_gpu < 141 * 10**9
    h100 = mk.plan_deployment("deepseek-v3", "h100-sxm", num_gpus=8, tp=8, context_len=2500, batch_size=1,
                              weight_fmt="fp8")
    h200 = mk.plan_deployment("deepseek-v3", "h200-sxm", num_gpus=8, tp=8, context_len=2500, batch_size=1,
                              weight_fmt="fp8")
    assert h100.weight_bytes_per_gpu == per_gpu and not h100.fits and h100.max_sequences == 0
    assert h200.fits
    two_nodes = mk.plan_deployment("deepseek-v3", "h100-sxm", num_gpus=16, tp=16, context_len=2500, batch_size=1,
                                   weight_fmt="fp8", link="ib-ndr")
    assert two_nodes.weight_bytes_per_gpu == -(-V3_PARAMS // 16) and two_nodes.fits


def _v3_decode_floor(batch, context, tp, bandwidth, link_rate):
    # weights read under uniform routing, FP8 (one byte), without the input table, split over tp GPUs
    touched = 256 * (1 - (1 - 8 / 256) ** batch)
    params = V3_PARAMS - 58 * 256 * V3_EXPERT + 58 * touched * V3_EXPERT - V3_EMBED
    cache = batch * context * 61 * (512 + 64) * 2  # the whole bf16 latent on every rank
    all_reduce = 2 * 61 * (2 * (tp - 1) * (batch * 7168 // tp) * 2) / link_rate
    return (params / tp + cache) / bandwidth + all_reduce


def test_deepseek_v3_on_h200_decode_floor_and_the_batch_a_20_ms_target_allows():
    kw = dict(num_gpus=8, tp=8, context_len=2500, weight_fmt="fp8")
    for batch in (84, 85, 86):
        plan = mk.plan_deployment("deepseek-v3", "h200-sxm", batch_size=batch, **kw)
        assert plan.decode_bound == "memory"
        assert plan.tpot_s == pytest.approx(_v3_decode_floor(batch, 2500, 8, 4.8e12, 450e9), rel=1e-9)
    assert _v3_decode_floor(85, 2500, 8, 4.8e12, 450e9) <= 0.020 < _v3_decode_floor(86, 2500, 8, 4.8e12, 450e9)


def test_llama_3_70b_bf16_same_prefill_floor_on_h100_and_h200():
    # a 2,000-token prefill is compute-bound, and both chips have the same bf16 peak
    h100, h200 = (mk.plan_deployment("llama-3-70b", gpu, num_gpus=8, tp=8, context_len=2000, batch_size=1)
                  for gpu in ("h100-sxm", "h200-sxm"))
    assert h100.prefill_s == pytest.approx(h200.prefill_s, rel=1e-12)


LLAMA70_PARAMS = 70_553_706_496  # Llama 3 70B: 80 layers, d = 8,192, FFN 28,672, GQA 64/8, vocabulary 128,256


def test_replica_shapes_weights_per_gpu_and_the_tp2_miss():
    """deployment_plan-replica-shape: bf16 weights per GPU are 2 P / t; at TP2 their read alone misses 20 ms."""
    for tp in (8, 4, 2):
        plan = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=tp, tp=tp, context_len=8192, batch_size=1)
        assert plan.weight_bytes_per_gpu == -(-2 * LLAMA70_PARAMS // tp)
    weights_read_s = 2 * LLAMA70_PARAMS / 2 / 3.35e12  # TP2: 70.6 GB a GPU at 3.35 TB/s
    assert weights_read_s > 0.020  # so no batch meets a 20 ms TPOT target
    tp2 = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=2, tp=2, context_len=8192, batch_size=1)
    assert tp2.tpot_s > 0.020


def test_larger_tp_leaves_more_of_a_fixed_step_for_the_cache():
    """At a fixed TPOT budget, the time left after reading W / t grows with t: T - W / (t B)."""
    budget, bandwidth, weights = 0.020, 3.35e12, 2 * LLAMA70_PARAMS
    left = {tp: budget - weights / tp / bandwidth for tp in (8, 4)}
    assert left[8] > left[4] > 0
    # a sequence's cache per GPU is C / t (t <= h_kv = 8), so a replica holds left * t / C sequences in the
    # budget, and the node 8 / t replicas of them: 8 left / C whatever t; the larger t's larger `left` wins
    rates = {}
    for tp in (8, 4):
        best = None
        for b in range(1, 400):
            p = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=tp, tp=tp, context_len=8192, batch_size=b)
            if not p.fits or p.tpot_s > budget:
                break
            best = p
        rates[tp] = 8 * best.tokens_per_s_per_gpu
    assert rates[8] > rates[4]


def test_weights_and_cache_in_tokens_fp8_and_the_served_share():
    """deployment_plan-weights-and-cache: Llama 3 70B, TP8 on 80 GB H100s, 8K sequences.

    Per GPU: weights 2 P / 8 (bf16) or P / 8 (FP8); cache of one 8K sequence 80 layers x 2 (K, V) x one KV head
    of 128 x 8,192 tokens x 2 bytes (bf16) or 1 (FP8). Served share: 0.9 x 80 GB (vLLM's default
    gpu_memory_utilization) less the weights and one 8,192-token step's activations.
    """
    hbm, tokens, step = 80 * 10**9, 8192, 8192
    act = step * 8192 * 2 + 2 * step * 28672 // 8 * 2 + step * (64 + 2 * 8) // 8 * 128 * 2
    assert f"{act / 1e9:.1f}" == "0.3"
    rows = {}
    for name, wb, kb in (("bf16", 2, 2), ("fp8", 1, 1)):
        weights = -(-LLAMA70_PARAMS * wb // 8)
        seq = 80 * 2 * 1 * 128 * tokens * kb
        rows[name] = (weights, (hbm - weights) // seq, (int(0.9 * hbm) - weights - act) // seq)
    assert rows["bf16"][1:] == (185, 161) and rows["fp8"][1:] == (424, 374)
    assert f"{rows['fp8'][0] / 1e9:.1f}" == "8.8"
    assert (185 * tokens, 424 * tokens, 161 * tokens, 374 * tokens) == (1_515_520, 3_473_408, 1_318_912, 3_063_808)
    for name, kw in (("bf16", {}), ("fp8", dict(weight_fmt="fp8", kv_fmt="fp8"))):
        plan = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=tokens, batch_size=1, **kw)
        assert (plan.weight_bytes_per_gpu, plan.max_sequences) == rows[name][:2]


def test_deepseek_r1_fp8_checkpoint_needs_two_h800_nodes():
    """DeepSeek-V3 README: 671B main model + 14B MTP module = 685B; FP8 is one byte a parameter;
    an H800 has the H100's 80 GB, so one 8-GPU node holds 640 GB."""
    ckpt = 671e9 + 14e9
    node = 8 * 80e9
    assert ckpt == 685e9 and node == 640e9
    assert ckpt > node
    assert round((2 * node - ckpt) / 16 / 1e9, 1) == 37.2
    assert round((8 * 141e9 - ckpt) / 8 / 1e9, 1) == 55.4


# Llama-3-8B (config.json): 32 layers, d 4096, 32 query heads and 8 KV heads of 128, d_ff 14336,
# vocabulary 128,256. Per layer and token the weights multiply: q and o (d x d each), k and v
# (d x 1024 each), the SwiGLU's three d x d_ff matrices.
L8, D8, FF8, V8 = 32, 4096, 14336, 128256
LAYER8 = 2 * D8 * D8 + 2 * D8 * 1024 + 3 * D8 * FF8


def _llama8_prefill_flops(n):
    # 2 FLOPs a weight per token for the layers; the head once (last token's logits); the embedding
    # lookup nothing; causal attention: token i scores i keys and mixes i values, 2 * 128 FLOPs each per head
    return 2 * n * L8 * LAYER8 + 2 * V8 * D8 + L8 * 32 * 2 * 2 * 128 * (n * (n + 1) // 2)


def test_mfu_counts_no_embedding_flops_and_the_head_once():
    flops = _llama8_prefill_flops(2048)
    assert mk.prefill_flops(mk.MODEL_FACTS["llama-3-8b"], 2048) == flops
    mfu = flops / 0.090 / 989.4e12  # measured 90 ms on an H100 SXM (989.4 dense bf16 TFLOP/s)
    assert round(100 * mfu) == 33  # not 37, which 2 x 8.03 B x 2048 would give
    floor = mk.plan_deployment("llama-3-8b", "h100-sxm", num_gpus=1, tp=1, context_len=2048, batch_size=1)
    assert abs(mfu - floor.prefill_s / 0.090) < 1e-3  # the floor is the step at MFU 1


def test_prefill_only_requests_per_gpu_and_gpus_for_500_per_s():
    rate = 0.5 * 989.4e12 / _llama8_prefill_flops(512)  # requests/s at MFU 50%
    assert 68 < rate < 69
    assert -(-500 // rate) == 8


def test_decode_mfu_of_llama_3_8b_at_the_memory_floor_is_a_fraction_of_a_percent():
    # grade5a: a decode step's MFU is small by design. Llama 3 8B (32 layers, d 4,096, 32 query heads and
    # 8 KV heads of 128, SwiGLU width 14,336, vocabulary 128,256), one decode token at 2K context.
    layers, d, heads, kv_heads, hd, ff, vocab, ctx = 32, 4096, 32, 8, 128, 14336, 128256, 2048
    per_layer = d * heads * hd * 2 + 2 * d * kv_heads * hd + 3 * d * ff  # q and o, k and v, gate/up/down
    flops = 2 * layers * per_layer + 2 * vocab * d + layers * 4 * heads * hd * ctx + layers * 4 * heads * hd
    assert flops == mk.prefill_flops(mk.MODEL_FACTS["llama-3-8b"], 1) + layers * 4 * heads * hd * ctx
    assert round(flops / 1e9, 1) == 16.1
    peak = 989e12  # H100 SXM dense bf16
    for batch, expected in ((1, 0.004), (64, 0.108)):
        tpot = mk.plan_deployment("llama-3-8b", "h100-sxm", num_gpus=1, tp=1, context_len=ctx,
                                  batch_size=batch).tpot_s
        assert batch * flops / tpot / peak == pytest.approx(expected, abs=0.0006)


def _llama70_decode_floor(tp, batch, wb, kb, context=8192):
    # weights less the input embedding table (a lookup), the batch's cache (one KV head per GPU at TP8, two
    # at TP4), over 3.35 TB/s; plus two ring all-reduces a layer of bf16 activations at 450 GB/s
    weights = (LLAMA70_PARAMS - 128256 * 8192) * wb / tp
    cache = batch * context * 80 * 2 * (8 // tp) * 128 * kb
    all_reduce = 2 * 80 * 2 * (tp - 1) / tp * batch * 8192 * 2 / 450e9
    return (weights + cache) / 3.35e12 + all_reduce


def test_cost_per_million_output_tokens_floor_and_plan():
    """deployment_plan-cost: $2 per GPU-hour, 20 ms TPOT; the plan divides by MBU x U = 0.5 x 0.5."""
    price_s = 2.0 / 3600
    rows = {}
    for name, tp, wb, kb in (("bf16", 8, 2, 2), ("fp8", 4, 1, 1)):
        batch = max(b for b in range(1, 400) if _llama70_decode_floor(tp, b, wb, kb) <= 0.020)
        rows[name] = (batch, 1e6 * tp * price_s * _llama70_decode_floor(tp, batch, wb, kb) / batch)
        kw = {} if wb == 2 else dict(weight_fmt="fp8", kv_fmt="fp8")
        plan = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=tp, tp=tp, context_len=8192,
                                  batch_size=batch, **kw)
        assert plan.tpot_s == pytest.approx(_llama70_decode_floor(tp, batch, wb, kb), rel=1e-9)
    assert rows["bf16"][0] == 134 and rows["fp8"][0] == 136
    assert f"{rows['bf16'][1]:.3f}" == "0.663" and f"{rows['bf16'][1] / 0.25:.2f}" == "2.65"
    assert f"{rows['fp8'][1]:.3f}" == "0.327" and f"{rows['fp8'][1] / 0.25:.2f}" == "1.31"
