"""Section deployment_plan-users-to-qps of "Plan a deployment": 100 million daily users to GPUs.

Users to requests/s, the peak, token rates, the fleet by Little's law (Llama 3 70B, FP8, TP4 on H100 SXM at a
20 ms TPOT), the network bytes, and a 100M-parameter model at the same rate, recomputed from the datasheet rates
and Llama 3 70B's shape written out (not through mk.plan_deployment or mk.fleet_estimate).
"""
import math

import chapter_outputs

# Llama 3 70B (config.json): 80 layers, d 8192, 64 query heads and 8 KV heads of 128, vocabulary 128256
L, D, H, KV, HD, V = 80, 8192, 64, 8, 128, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
HBM_BPS, BF16, HBM, NVLINK = 3.35e12, 989e12, 80e9, 450e9  # H100 SXM datasheet; NVLink 4 each way
TP, CTX, OUT, TPOT = 4, 1300, 300, 0.020
PEAK = 100e6 * 10 / 86_400 * 1.7 * 1.5  # users x requests/day / s, x diurnal x burst


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("deployment_plan"), key)


def step(tokens, logits, attn_flops, kv_read):  # FP8 weights and cache (1 byte), W8A8 at twice the bf16 peak
    matmul = 2 * (P70 - 2 * V * D) * tokens + 2 * V * D * logits
    compute = (matmul + attn_flops) / (2 * BF16) / TP
    memory = ((P70 - V * D) / TP + kv_read) / HBM_BPS
    ring = 2 * (TP - 1) * (tokens * D // TP) * 2  # one bf16 ring all-reduce, bytes each GPU sends
    return max(memory, compute) + 2 * L * ring / NVLINK


def kv_per_gpu(ctx):
    return 2 * L * (KV // TP) * HD * ctx


def decode(batch):
    return step(batch, batch, 2 * L * 2 * H * CTX * HD * batch, batch * kv_per_gpu(CTX))


def test_users_to_peak_and_tokens():
    assert f"{100e6 * 10 / 86_400:,.0f}" == "11,574" == glued("dp_qps_avg")
    assert f"{PEAK:,.0f}" == "29,514" == glued("dp_qps_peak")
    assert f"{PEAK * 1000 / 1e6:.1f}" == "29.5" == glued("dp_qps_in_mtok")
    assert f"{PEAK * OUT / 1e6:.2f}" == "8.85" == glued("dp_qps_out_mtok")
    # the 1.5 is event headroom, not Poisson noise: sqrt(n)/n at the peak is under 1%
    assert f"{100 * PEAK ** -0.5:.1f}" == "0.6" == glued("dp_qps_poisson")
    # one time zone: a half-sine over 16 waking hours, nothing overnight
    one_tz = 24 / (16 * 2 / math.pi)
    assert f"{one_tz:.1f}" == "2.4" == glued("dp_qps_one_tz") and glued("dp_qps_wake_h") == "16"
    assert f"{one_tz / 1.7:.1f}" == "1.4" == glued("dp_qps_one_tz_x")
    assert 1.2 <= one_tz / 1.7 <= 1.5


def test_fleet_by_littles_law():
    fit = int((HBM - math.ceil(P70 / TP)) // kv_per_gpu(CTX))
    batch = max(b for b in range(1, fit + 1) if decode(b) <= TPOT)
    assert (batch, fit) == (601, 1171)
    assert (glued("dp_qps_batch"), glued("dp_qps_fit")) == ("601", "1171")
    assert batch < fit  # the TPOT target caps the batch, not memory
    pre = step(CTX, 1, 2 * L * (2 * H * CTX * CTX * HD) // 2, kv_per_gpu(CTX))
    in_flight = PEAK * (pre + OUT * decode(batch))
    replicas = math.ceil(in_flight / batch + PEAK * pre)
    assert f"{in_flight:,.0f}" == glued("dp_qps_inflight")
    assert f"{PEAK * pre:,.0f}" == "1,007" == glued("dp_qps_prefill_replicas")
    assert f"{in_flight / batch:,.0f}" == "296" == glued("dp_qps_decode_replicas")
    assert PEAK * pre > 3 * in_flight / batch  # prefill is most of the fleet
    assert glued("dp_qps_prefix_hit") == "50"
    assert f"{0.5 * PEAK * pre:,.0f}" == "504" == glued("dp_qps_prefill_cached")
    assert (f"{replicas * TP:,}", str(math.ceil(replicas * TP / 8))) == ("5,216", "652")
    assert (glued("dp_qps_gpus"), glued("dp_qps_nodes")) == ("5,216", "652")


def test_network_is_not_the_bottleneck_for_text():
    req, resp = 1000 * 4 + 1000, OUT * (4 + 200)
    ingress, egress = 8 * PEAK * req, 8 * PEAK * resp
    assert (f"{ingress / 1e9:.2f}", f"{egress / 1e9:.1f}") == ("1.18", "14.4")
    assert (glued("dp_qps_ingress"), glued("dp_qps_egress")) == ("1.18", "14.4")
    assert f"{resp / 1e3:.1f}" == glued("dp_qps_resp_kb") == "61.2"
    assert f"{100 * 200 / 204:.0f}" == "98" == glued("dp_qps_framing")  # at one token a chunk
    per_node = (ingress + egress) / 652
    assert f"{per_node / 1e6:.0f}" == "24" == glued("dp_qps_node_mbps")
    assert per_node < 1e-4 * 400e9  # one 400 Gb/s port
    assert f"{8 * PEAK * 1e6 / 1e9:,.0f}" == "236" == glued("dp_qps_jpeg_gbps")
    assert f"{8 * PEAK * 1920 * 1080 * 3 / 400e9:.1f}" == "3.7" == glued("dp_qps_raw_ports")


def test_small_model_fits_a_few_sockets():
    flops = 2 * 100e6 * 100 * PEAK
    assert f"{flops / 1e12:,.0f}" == "590" == glued("dp_qps_small_tflops")
    assert f"{flops / BF16:.2f}" == "0.60" == glued("dp_qps_small_gpus")
    assert f"{flops / (56 * 2.0e9 * 1024):.1f}" == "5.1" == glued("dp_qps_small_sockets")


def test_small_model_unbatched_is_bandwidth_bound():
    weight_bps = 2 * 100e6 * PEAK  # 200 MB of bf16 weights read once per request
    assert f"{weight_bps / 1e12:.1f}" == "5.9" == glued("dp_qps_small_tbps")
    assert f"{weight_bps / HBM_BPS:.1f}" == "1.8" == glued("dp_qps_small_hbm")
    assert weight_bps > HBM_BPS  # more than one H100 without batching, although the FLOPs are 0.6 of one
    assert f"{weight_bps / (8 * 4800e6 * 8):.0f}" == "19" == glued("dp_qps_small_ddr")
    ridge = BF16 / HBM_BPS
    assert f"{ridge:.0f}" == "295" == glued("dp_qps_small_ridge")
    assert str(math.ceil(ridge / 100)) == "3" == glued("dp_qps_small_batch")
