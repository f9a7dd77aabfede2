"""Section deployment_plan-ten-thousand-gpus of "Plan a deployment": 10,000 H100s split over three models.

Recomputed here without mk.plan_deployment for the two dense models (Llama 3 70B on TP4 and Llama 3 8B on one
GPU, both FP8): their decode and prefill floors from the datasheet rates and the models' shapes written out,
the failure arithmetic from the Llama 3 paper's Table 5 counts, the Poisson spare pool, the pools by Little's
law, the blast radius, the weight-loading and cache-transfer times. The flagship's MoE floor (DeepSeek-V3 on
16 GPUs) is the one input taken from mha_kit: its expert reads are tested with the chapter's MoE section.
"""
import math

import chapter_outputs
import mha_kit as mk

HBM_BPS, BF16_FLOPS, HBM_BYTES, NVLINK = 3.35e12, 989e12, 80e9, 450e9  # H100 SXM datasheet; NVLink 4 each way
# (layers, d, query heads, KV heads, head size, vocabulary, parameters) from each model's config.json
SHAPES = {"llama-3-70b": (80, 8192, 64, 8, 128, 128_256, 70_553_706_496),
          "llama-3-8b": (32, 4096, 32, 8, 128, 128_256, 8_030_261_248)}
V3_PARAMS = 671_000_000_000  # DeepSeek-V3 main model, 671B (arXiv:2412.19437), FP8: one byte each
PROMPT, OUT, UTIL, GPUS, NODE = 2000, 500, 0.7, 10_000, 8
MIX = {"deepseek-v3": 0.3, "llama-3-70b": 0.4, "llama-3-8b": 0.3}
TPOT = {"deepseek-v3": 0.015, "llama-3-70b": 0.040, "llama-3-8b": 0.030}  # MLPerf interactive p99 TPOT
TP = {"deepseek-v3": 16, "llama-3-70b": 4, "llama-3-8b": 1}
# Llama 3 paper, Table 5: unexpected interruptions in 54 days on 16,384 H100s, by what a serving replica loses
GPU_ROWS = (148, 72, 19, 17, 6, 6)  # faulty GPU, HBM3, SRAM, system processor, silent data corruption, thermal
NODE_ROWS = (32, 35, 7, 3, 3, 2, 2, 2, 2)  # host maintenance, switch/cable, NIC, SSD, PSU, chassis, IO board, CPU, DRAM
SOFT_ROWS = (54, 2, 7)  # software bug, dependency, NCCL watchdog timeouts
NB = chapter_outputs.notebook("deployment_plan")


def glued(key):
    return chapter_outputs.glued(NB, key)


def kv_per_gpu(model, ctx, tp):  # FP8 cache: one byte an element
    layers, _, _, kv, hd, _, _ = SHAPES[model]
    return 2 * layers * max(kv // tp, 1) * hd * ctx


def step(model, tp, tokens, logits, attn_flops, kv_read):  # FP8 weights (W8A8 at twice the bf16 peak)
    layers, d, _, _, _, vocab, params = SHAPES[model]
    matmul = 2 * (params - 2 * vocab * d) * tokens + 2 * vocab * d * logits
    compute = (matmul + attn_flops) / (2 * BF16_FLOPS) / tp
    memory = ((params - vocab * d) / tp + kv_read) / HBM_BPS
    comm = 2 * layers * 2 * (tp - 1) * (tokens * d // tp) * 2 / NVLINK  # ring all-reduces of bf16 activations
    return max(memory, compute) + comm


def decode(model, tp, batch, ctx):
    layers, _, heads, _, hd, _, _ = SHAPES[model]
    return step(model, tp, batch, batch, 2 * layers * 2 * heads * ctx * hd * batch, batch * kv_per_gpu(model, ctx, tp))


def prefill(model, tp, n):
    layers, _, heads, _, hd, _, _ = SHAPES[model]
    return step(model, tp, n, 1, 2 * layers * (2 * heads * n * n * hd) // 2, kv_per_gpu(model, n, tp))


def dense(model):
    tp, ctx = TP[model], PROMPT + OUT
    fit = int((HBM_BYTES - math.ceil(SHAPES[model][-1] / tp)) // kv_per_gpu(model, ctx, tp))
    batch = max(b for b in range(1, fit + 1) if decode(model, tp, b, ctx) <= TPOT[model])
    return dict(batch=batch, tpot=decode(model, tp, batch, ctx), pre=prefill(model, tp, PROMPT))


def flagship():  # the MoE floor, from the kit (see the module docstring)
    ports = mk.Link(name="x8", title="8 NDR ports", cite="nvidiadgxh100", source="8 x 50 GB/s", bytes_per_s=400e9)
    dec = mk.largest_batch_within_tpot("deepseek-v3", "h100-sxm", tp=16, context_len=PROMPT + OUT, tpot_target=0.015,
                                       link=ports, weight_fmt="fp8")
    pre = mk.plan_deployment("deepseek-v3", "h100-sxm", num_gpus=16, tp=16, context_len=PROMPT, batch_size=1,
                             link=ports, weight_fmt="fp8").prefill_s
    return dict(batch=dec.batch_size, tpot=dec.tpot_s, pre=pre)


SHAPE = {"deepseek-v3": flagship(), "llama-3-70b": dense("llama-3-70b"), "llama-3-8b": dense("llama-3-8b")}
for _m, _s in SHAPE.items():
    _s["gpu_s"] = TP[_m] * (_s["pre"] + OUT * _s["tpot"] / _s["batch"])
PER_DAY = {k: sum(rows) / (16_384 * 54) * GPUS for k, rows in (("gpu", GPU_ROWS), ("node", NODE_ROWS))}
HW_DAY = PER_DAY["gpu"] + PER_DAY["node"]
DOWN = 3.0 * HW_DAY  # nodes in repair: rate times 3 days out


def spares(mean, risk=0.001):  # smallest k with P[Poisson(mean) <= k] >= 1 - risk, by the recurrence p_i = p_{i-1} m / i
    p = cdf = math.exp(-mean)
    k = 0
    while cdf < 1 - risk:
        k += 1
        p *= mean / k
        cdf += p
    return k


SPARE = spares(DOWN)
SERVING = GPUS - NODE * SPARE


def pools(rate):
    out = {}
    for m, s in SHAPE.items():
        pre_busy, dec_busy = rate * MIX[m] * s["pre"], rate * MIX[m] * OUT * s["tpot"] / s["batch"]
        out[m] = ((0, math.ceil((pre_busy + dec_busy) / UTIL)) if m == "llama-3-8b"
                  else (math.ceil(pre_busy / UTIL), math.ceil(dec_busy / UTIL)))
    return out


def used(p):
    return sum((a + b) * TP[m] for m, (a, b) in p.items())


RATE = max(r for r in range(1, 20_000) if used(pools(r)) <= SERVING)
SPLIT = pools(RATE)
POOL_GPUS = {m: (a + b) * TP[m] for m, (a, b) in SPLIT.items()}


def test_table5_counts_and_the_papers_shares():
    assert sum(GPU_ROWS) + sum(NODE_ROWS) + sum(SOFT_ROWS) == 419 == int(glued("dp_10k_t5_total"))
    assert (sum(GPU_ROWS), sum(NODE_ROWS), sum(SOFT_ROWS)) == (268, 88, 63)
    assert f"{148 / 419:.1%}" == "35.3%" != "30.1%"  # the paper prints 30.1% for the 148 faulty GPUs
    assert f"{sum(GPU_ROWS) / 419:.1%}" == "64.0%" != "58.7%"  # and 58.7% for the GPU rows together
    printed = chapter_outputs.printed(NB, "T5_GPUS, T5_DAYS")
    assert "faulty GPU 35.3%, all GPU rows 64.0%" in printed


def test_failure_rates_and_the_shared_spare_pool():
    assert [glued(k) for k in ("dp_10k_gpu_day", "dp_10k_node_day", "dp_10k_hw_day")] == \
        [f"{PER_DAY['gpu']:.2f}", f"{PER_DAY['node']:.2f}", f"{HW_DAY:.2f}"] == ["3.03", "0.99", "4.02"]
    assert glued("dp_10k_hw_every_h") == f"{24 / HW_DAY:.1f}" == "6.0"
    assert glued("dp_10k_down") == f"{DOWN:.1f}" == "12.1"
    assert SPARE == int(glued("dp_10k_spare_nodes")) == 24
    assert spares(DOWN, 0.01) < SPARE < spares(DOWN, 0.0001)  # the bound moves with the accepted risk
    assert int(glued("dp_10k_spare_gpus")) == 8 * SPARE == 192
    own = sum(spares(DOWN * POOL_GPUS[m] / GPUS) for m in POOL_GPUS)
    assert own == int(glued("dp_10k_own_spares")) == 30 and own > SPARE  # pooling the spares saves nodes


def test_dense_replicas_recomputed_by_hand():
    assert (SHAPE["llama-3-70b"]["batch"], SHAPE["llama-3-8b"]["batch"]) == (608, 439)  # both capped by memory
    for model, key in (("llama-3-70b", "70b"), ("llama-3-8b", "8b")):
        assert glued(f"dp_10k_{key}_batch") == str(SHAPE[model]["batch"])
        assert glued(f"dp_10k_{key}_gpu_s") == f"{SHAPE[model]['gpu_s']:.3f}"
    assert [glued(f"dp_10k_{k}_gpu_s") for k in ("70b", "8b")] == ["0.307", "0.042"]
    assert V3_PARAMS > NODE * HBM_BYTES  # the flagship's FP8 weights exceed one node: two-node replicas
    assert f"{V3_PARAMS / 16 / 1e9:.1f}" == "41.9"
    assert glued("dp_10k_v3_gpu_s") == f"{SHAPE['deepseek-v3']['gpu_s']:.3f}"


def test_the_split_fills_the_serving_gpus():
    assert SERVING == 9808 and glued("dp_10k_serving") == "9,808"
    assert f"{RATE:,}" == glued("dp_10k_rate") == "8,309"
    assert used(pools(RATE + 1)) > SERVING >= used(SPLIT)  # one more request/s no longer fits
    assert glued("dp_10k_out_tok") == f"{RATE * OUT / 1e6:.2f}"
    for model, key in (("deepseek-v3", "v3"), ("llama-3-70b", "70b"), ("llama-3-8b", "8b")):
        assert [int(glued(f"dp_10k_{key}_prefill")), int(glued(f"dp_10k_{key}_decode"))] == list(SPLIT[model])
        assert glued(f"dp_10k_{key}_pool_gpus") == f"{POOL_GPUS[model]:,}"
    assert SPLIT == {"deepseek-v3": (104, 408), "llama-3-70b": (251, 114), "llama-3-8b": (0, 149)}
    assert glued("dp_10k_v3_pool_share") == "82%"


def test_replicas_lost_and_blast_radius():
    lost = {m: (PER_DAY["gpu"] + PER_DAY["node"] * max(1, NODE // TP[m])) * POOL_GPUS[m] / GPUS for m in TP}
    assert [glued(f"dp_10k_{k}_lost") for k in ("v3", "70b", "8b")] == \
        [f"{lost[m]:.2f}" for m in ("deepseek-v3", "llama-3-70b", "llama-3-8b")] == ["3.30", "0.73", "0.16"]
    assert glued("dp_10k_v3_node_share") == f"{16 / POOL_GPUS['deepseek-v3']:.2%}" == "0.20%"
    assert glued("dp_10k_8b_node_share") == f"{8 / POOL_GPUS['llama-3-8b']:.1%}"
    assert glued("dp_10k_pod_share") == f"{3072 / GPUS:.0%}" == "31%"  # 192 racks of 16 GPUs (sec. 3.3.1)
    assert glued("dp_10k_one_mtbf_h") == f"{24 / HW_DAY:.1f}"
    v3_rate = (sum(GPU_ROWS) * 16 + sum(NODE_ROWS) * 2 * 8) / (16_384 * 54)  # a 2-node replica's faults a day
    assert glued("dp_10k_v3_mtbf_d") == f"{1 / v3_rate:.0f}" == "155"
    gain = int(glued("dp_10k_v3_tps32")) / int(glued("dp_10k_v3_tps16")) - 1
    assert 0 < gain < 0.25 and glued("dp_10k_v3_tps_gain") == f"{gain:.0%}"  # a larger replica buys little


def test_weight_loading_and_cache_transfer():
    # 8 x PCIe 4.0 x4 drives; storage NICs, two dual-port ConnectX-7 (not the eight compute ports); Llama 3's store
    nvme, ports, store = 8 * 8e9, 4 * 50e9, 2e12
    v3_node = V3_PARAMS * 8 // 16  # half the flagship a node
    assert glued("dp_10k_v3_store_s") == f"{v3_node / ports:.1f}" == "1.7"  # 0.8 s over the eight compute ports
    assert glued("dp_10k_v3_node_gb") == f"{v3_node / 1e9:.0f}" == "336"
    assert glued("dp_10k_v3_nvme_s") == f"{v3_node / nvme:.1f}" == "5.2"
    add = math.ceil(0.1 * POOL_GPUS["deepseek-v3"] / 8)
    assert int(glued("dp_10k_add_nodes")) == add == 103
    assert glued("dp_10k_grow_s") == f"{max(add * v3_node / store, v3_node / ports):.0f}" == "17"
    per_node = {"deepseek-v3": v3_node, "llama-3-70b": 2 * SHAPES["llama-3-70b"][-1],
                "llama-3-8b": 8 * SHAPES["llama-3-8b"][-1]}
    cold = sum(POOL_GPUS[m] // 8 * b for m, b in per_node.items()) / store
    assert glued("dp_10k_cold_min") == f"{cold / 60:.1f}"
    chunk = 256 * 2**20  # peer to peer: the store feeds one node, each forwards chunks to the next
    assert glued("dp_10k_grow_p2p_s") == f"{v3_node / ports + (add - 1) * chunk / ports:.1f}"
    cold_p2p = max(b / ports + (POOL_GPUS[m] // 8 - 1) * chunk / ports for m, b in per_node.items())
    assert glued("dp_10k_cold_p2p_s") == f"{cold_p2p:.0f}" and cold_p2p < cold / 10
    kv70 = 2 * 80 * 8 * 128 * PROMPT * 1 / 50e9  # FP8 cache, one port
    kv_v3 = 61 * (512 + 64) * PROMPT * 2 / 50e9  # bf16 latent and rope key
    assert [glued("dp_10k_kv_70_ms"), glued("dp_10k_kv_v3_ms")] == [f"{1e3 * kv70:.1f}", f"{1e3 * kv_v3:.1f}"]
    batch = UTIL * 0.5 * POOL_GPUS["llama-3-70b"] * 86_400 / SHAPE["llama-3-70b"]["gpu_s"]
    assert glued("dp_10k_batch_mreq") == f"{batch / 1e6:.0f}"


def test_tp4_is_close_to_tp8_not_best_and_the_memory_reserve():
    tp4, tp8 = (int(glued(k).replace(",", "")) for k in ("dp_shape_fp8_tp4_rate", "dp_10k_fp8_tp8_rate"))
    assert tp4 < tp8 and glued("dp_10k_tp4_share") == f"{tp4 / tp8:.0%}" == "94%"
    assert int(glued("dp_10k_v3_w4_gb")) == round(V3_PARAMS / 2 / 1e9) < int(glued("dp_10k_node_hbm_gb")) == 640
    params70 = SHAPES["llama-3-70b"][-1]
    b90 = int((0.9 * HBM_BYTES - math.ceil(params70 / 4)) // kv_per_gpu("llama-3-70b", PROMPT + OUT, 4))
    assert glued("dp_10k_70b_batch90") == str(b90) and b90 < SHAPE["llama-3-70b"]["batch"]


def test_spares_short_hours_a_year():
    tail = 1 - sum(math.exp(-DOWN) * DOWN**i / math.factorial(i) for i in range(SPARE + 1))
    assert tail <= 0.001 and glued("dp_10k_short_h") == f"{tail * 8760:.0f}"


def test_why_tp32_buys_little_and_what_ep_buys():
    latent = 61 * (512 + 64) * (PROMPT + OUT) * 2  # bf16 latent and rope key a sequence, whole on every TP rank
    batch_over_tpot = int(glued("dp_10k_v3_tps32")) * 32  # tokens/s/GPU x GPUs = batch / TPOT
    share = latent * batch_over_tpot / HBM_BPS
    assert 0.3 < share < 0.7 and abs(int(glued("dp_10k_v3_latent_share").rstrip("%")) / 100 - share) < 0.02
    stage = V3_PARAMS / 16 / HBM_BPS  # PP2 x TP8: a stage's share of the FP8 weights on each GPU
    assert glued("dp_10k_pp_stage_ms") == f"{1e3 * stage:.1f}" and glued("dp_10k_pp_token_ms") == f"{2e3 * stage:.0f}"
    assert 2 * stage > TPOT["deepseek-v3"]  # two stages in turn miss the 15 ms target
    assert glued("dp_10k_ds_gpu_tps") == f"{14_800 / 8:,.0f}" == "1,850"  # deepseekinfra2025: 14.8k a node
    assert abs(float(glued("dp_10k_ep_ratio")) - 1850 / int(glued("dp_10k_v3_tps16"))) < 0.05
    assert glued("dp_10k_ds_cache_hit") == "56.3%" and abs(342 / 608 - 0.563) < 0.001  # 342B of 608B input tokens
