"""Section deployment_plan-32k-in-200-out of "Plan a deployment": 32K tokens in, 200 out.

Recomputed from Llama 3 70B's shape written out (config.json) and the H100 SXM datasheet rates, with the
chapter's floor written out here (max of bytes / HBM bandwidth and FLOPs / peak, plus two ring all-reduces a
layer at NVLink's peak), not through mk.plan_deployment, mk.prefill_flops or mk.prefix_prefill_flops.
"""
import math

import chapter_outputs

# Llama 3 70B (config.json): 80 layers, d 8192, 64 query heads and 8 KV heads of 128, FFN 28672, vocabulary 128256
L, D, H, KV, HD, FF, V = 80, 8192, 64, 8, 128, 28_672, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
BW, PEAK, HBM, NVLINK, NDR = 3.35e12, 989e12, 80e9, 450e9, 400e9 / 8  # H100 SXM; NDR InfiniBand 400 Gb/s
TP, N, OUT = 8, 32_768, 200
PER_TOKEN = L * (2 * D * H * HD + 2 * D * KV * HD + 3 * D * FF)  # q, o, k, v and the SwiGLU FFN, per token


def kv_per_gpu(ctx, b=2):
    return 2 * L * (KV // TP) * HD * ctx * b


def comm(tokens):  # 2 ring all-reduces a layer of (tokens, d) bf16: each GPU sends 2 (tp - 1) / tp of it
    return 2 * L * 2 * (TP - 1) * (tokens * D // TP) * 2 / NVLINK


def step(tokens, logits, attn_flops, kv_bytes, wb=2):
    rate = PEAK * (2 if wb == 1 else 1)
    compute = (2 * (P70 - 2 * V * D) * tokens + 2 * V * D * logits + attn_flops) / rate / TP
    memory = ((P70 - V * D) * wb / TP + kv_bytes) / BW
    return max(memory, compute) + comm(tokens)


def decode(ctx, batch=1, wb=2):
    return step(batch, batch, 2 * L * 2 * H * HD * ctx * batch, batch * kv_per_gpu(ctx, wb), wb)


def prefill(n, wb=2):
    return step(n, 1, L * 2 * H * HD * n * n, kv_per_gpu(n, wb), wb)


def new_flops(cached, new):  # new token i (1-based) attends to cached + i keys, 4 h d_h FLOPs a key a layer
    return 2 * new * PER_TOKEN + 2 * V * D + L * 4 * H * HD * (new * cached + new * (new + 1) // 2)


def max_seqs(ctx, wb=2):
    return int((HBM - math.ceil(P70 * wb / TP)) // kv_per_gpu(ctx, wb))


PF_FLOPS = new_flops(0, N)
ATTN = L * 2 * H * HD * N * (N + 1)
DEC_FLOPS = sum(2 * (P70 - V * D) + L * 4 * H * HD * (N + i) for i in range(OUT))
DECODE_S = sum(decode(N + i) for i in range(OUT))
BATCH = max_seqs(N + OUT)


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("deployment_plan"), key)


def test_prefill_against_decode_alone():
    comp = PF_FLOPS / (TP * PEAK)
    assert f"{prefill(N):.2f}" == "1.08" == glued("lc47_prefill_s")
    assert (f"{1e3 * comp:.0f}", f"{1e3 * (prefill(N) - comp):.0f}") == ("745", "334")
    assert (glued("lc47_prefill_comp_ms"), glued("lc47_prefill_ar_ms")) == ("745", "334")
    assert f"{1e3 * decode(N):.2f}" == "5.60" == glued("lc47_step_ms")
    assert f"{DECODE_S:.2f}" == "1.12" == glued("lc47_decode_s")


def test_setting_fits_llama31_context():
    ctx31 = 131_072  # Llama 3.1 70B config.json max_position_embeddings; Llama 3 70B's is 8192
    assert N + OUT > 8192 and N + OUT <= ctx31 and glued("lc47_max_ctx") == "131,072"
    assert (glued("lc47_n_ar"), glued("lc47_n_in"), glued("lc47_d")) == (str(2 * L), "32,768", "8,192")


def test_flops_of_each_phase():
    assert PER_TOKEN == P70 - 2 * V * D - (2 * L + 1) * D  # all but embeddings, head and the RMSNorm weights
    assert f"{PF_FLOPS / 1e15:.2f}" == "5.89" == glued("lc47_pf_pflop")
    assert f"{ATTN / PF_FLOPS:.0%}" == "24%" == glued("lc47_attn_pct")
    assert f"{DEC_FLOPS / 1e15:.3f}" == "0.045" == glued("lc47_dec_pflop")
    assert f"{PF_FLOPS / DEC_FLOPS:.0f}" == "131" == glued("lc47_flop_ratio")


def test_cache_caps_concurrency_and_prefill_dominates():
    assert f"{2 * L * KV * HD * 2 * (N + OUT) / 2**30:.2f}" == "10.06" == glued("lc47_cache_gib")
    assert BATCH == 46 and glued("lc47_batch") == "46"
    busy = decode(N + OUT, BATCH)
    share = BATCH * kv_per_gpu(N + OUT) / (math.ceil(P70 * 2 / TP) + BATCH * kv_per_gpu(N + OUT))
    dec_share = OUT * busy / BATCH
    assert f"{1e3 * busy:.1f}" == "24.2" == glued("lc47_busy_ms")
    assert f"{share:.0%}" == "78%" == glued("lc47_cache_share")
    assert f"{dec_share:.3f}" == "0.105" == glued("lc47_dec_share_s")
    assert f"{prefill(N) / (prefill(N) + dec_share):.0%}" == "91%" == glued("lc47_pf_pct")
    assert f"{1 / (prefill(N) + dec_share):.2f}" == "0.84" == glued("lc47_rate")
    assert f"{1 / prefill(N):.2f}" == "0.93" == glued("lc47_pf_rate")
    assert f"{OUT * busy:.2f}" == "4.84" == glued("lc47_own_dec_s")
    assert f"{prefill(N) / (prefill(N) + OUT * busy):.0%}" == "18%" == glued("lc47_ttft_busy_pct")


def test_littles_law_caps_a_colocated_node():
    rate = 1 / (prefill(N) + OUT * decode(N + OUT, BATCH) / BATCH)
    wait = BATCH / rate  # Little: L = rate x W
    assert (f"{wait:.0f}", f"{1e3 * wait / OUT:.0f}") == ("54", "272") == (glued("lc47_wait_s"),
                                                                          glued("lc47_wait_tpot_ms"))

    def tpot(b):  # W / OUT with W = b / rate(b), rate(b) = 1 / (prefill + OUT x step(b) / b)
        return b * (prefill(N) + OUT * decode(N + OUT, b) / b) / OUT

    b = max(b for b in range(1, BATCH + 1) if tpot(b) <= 0.050)
    assert tpot(b + 1) > 0.050 and b == 7 and glued("lc47_slo_b") == "7" and glued("lc47_tpot_target_ms") == "50"
    r = 1 / (prefill(N) + OUT * decode(N + OUT, b) / b)
    assert f"{r:.2f}" == "0.76" == glued("lc47_slo_rate")
    assert f"{1e3 * tpot(b):.0f}" == "46" == glued("lc47_slo_tpot_ms")
    assert f"{r * prefill(N):.0%}" == "82%" == glued("lc47_slo_pf_pct")
    dec_node = BATCH / (OUT * decode(N + OUT, BATCH))
    assert f"{dec_node:.1f}" == "9.5" == glued("lc47_dec_node")
    assert f"{dec_node * prefill(N):.0f}" == "10" == glued("lc47_pd_ratio")


def test_levers():
    assert f"{PF_FLOPS / new_flops(N - 512, 512):.0f}" == "52" == glued("lc47_hit_x")
    assert glued("lc47_chunks") == str(N // 2048) == "16"
    assert f"{1e3 * new_flops(N - 2048, 2048) / (TP * PEAK):.0f}" == "57" == glued("lc47_chunk_ms")
    assert f"{1e3 * 2 * L * KV * HD * 2 * N / NDR:.0f}" == "215" == glued("lc47_xfer_ms")
    assert f"{1e3 * (new_flops(N - 2048, 2048) / (TP * PEAK) + comm(2048)):.0f}" == "78" == glued("lc47_chunk_total_ms")
    assert f"{2 * L * KV * HD * 2 * N / 2**30:.2f}" == "10.00" == glued("lc47_prompt_gib")
    assert f"{kv_per_gpu(N) / 2**30:.2f}" == "1.25" == glued("lc47_prompt_gpu_gib")
    assert f"{1e3 * kv_per_gpu(N) / NDR:.0f}" == "27" == glued("lc47_xfer_gpu_ms")  # each GPU its own port
    assert f"{kv_per_gpu(N) / NDR / prefill(N):.1%}" == glued("lc47_xfer_pct")
    assert f"{1e3 * kv_per_gpu(N) / 64e9:.0f}" == "21" == glued("lc47_reload_ms")  # PCIe Gen5, 64 GB/s a direction
    assert f"{prefill(N, wb=1):.2f}" == "0.71" == glued("lc47_f8_prefill_s")
    assert f"{prefill(N, wb=1) + ATTN / (TP * 2 * PEAK):.2f}" == "0.80" == glued("lc47_f8_bf16_attn_s")
    assert glued("lc47_bf16_step_ms") == "5.60"
    assert f"{1e3 * decode(N, wb=1):.2f}" == "2.80" == glued("lc47_f8_step_ms")
    assert max_seqs(N + OUT, wb=1) == 105 and glued("lc47_f8_batch") == "105"


def test_links_resolve():
    labels = chapter_outputs.book_labels()
    for label in ("deployment_plan-32k-in-200-out", "prefix_caching-hashed", "continuous_batching-partial-prefill",
                  "disaggregated_serving-bytes", "disaggregated_serving-ratio", "weight_quantization-w4a16-w8a8",
                  "low_precision_kv-vllm", "prefix_caching-growing-conversation", "prefix_caching-routing",
                  "deployment_plan-open-conversations", "deployment_plan-prefill", "deployment_plan-decode-floor"):
        assert label in labels, label
