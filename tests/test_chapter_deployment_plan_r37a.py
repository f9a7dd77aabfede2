"""Sections deployment_plan-70b-one-gpu-memory and deployment_plan-200-tokens-per-second of "Plan a deployment".

One H100 for Llama 3 70B: weights, the activations of one step at TP1, an assumed 1 GB reserve and the
cache tokens left, at step budgets of 8,192 and 2,048 tokens. 200 tokens/s a request on a TP8 H100 node:
the weight reads, batch-1 floors, the all-reduces' fixed cost, the largest batch within 5 ms, and the
speculative speed-up per batch. All recomputed from Llama 3 70B's shape written out, the H100 datasheet
and NCCL's latency constants, not through mk.
"""
import math
import pathlib

import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"

# Llama 3 70B (config.json): 80 layers, d 8192, 64 query heads and 8 KV heads of 128, FFN 28672, vocabulary 128256
L, D, H, KV, HD, FF, V = 80, 8192, 64, 8, 128, 28_672, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
HBM, BW, BF16, NVLINK = 81_559 * 2**20, 3.35e12, 989e12, 450e9  # H100 SXM: bytes (nvidia-smi's 81,559 MiB), B/s, dense bf16 FLOP/s, NVLink each way
KV_TOKEN = 2 * L * KV * HD * 2  # bf16 K and V, bytes a token
RESERVE = 1.0e9
CTX, TARGET, ONESHOT = 4096, 1 / 200, 8e-6
NB = chapter_outputs.notebook("deployment_plan")


def glued(key):
    return chapter_outputs.glued(NB, key)


def act(tokens):  # hidden states + q, k, v + gate and up, bf16, TP1
    return 2 * tokens * (D + (H + 2 * KV) * HD + 2 * FF)


EMB_HEAD = 2 * V * D  # embedding + lm_head, kept in bf16 by FP8 and int4 checkpoints


def weights(bits):
    return P70 * 2 if bits == 16 else (P70 - EMB_HEAD) * bits / 8 + EMB_HEAD * 2


def left(bits, tokens, share=0.9):
    return share * HBM - weights(bits) - act(tokens) - RESERVE


def test_activations_at_tp1():
    assert act(8192) == 1_241_513_984 and act(2048) == act(8192) // 4
    assert glued("og_fp8_8192_act") == "1.24" and glued("og_fp8_2048_act") == "0.31"


def test_one_gpu_cache_tokens():
    assert KV_TOKEN == 320 * 1024 and glued("og_kv_kib") == "320"
    assert left(16, 2048) < 0 and left(8, 8192) > 0  # bf16 does not fit; FP8 does at 8,192
    assert glued("og_bf16_8192_tok") == "0"
    assert f"{0.9 * HBM / 1e9:.1f}" == glued("og_budget_gb") == "77.0"
    w4 = 4 + 16 / 128
    got = {"fp8_8192": int(left(8, 8192) // KV_TOKEN), "fp8_2048": int(left(8, 2048) // KV_TOKEN), "w4a16_8192": int(left(w4, 8192) // KV_TOKEN),
           "w4a16_2048": int(left(w4, 2048) // KV_TOKEN)}
    assert got == {"fp8_8192": 6_323, "fp8_2048": 9_165, "w4a16_8192": 107_509, "w4a16_2048": 110_351}
    for key, tokens in got.items():
        assert glued(f"og_{key}_tok") == f"{tokens:,}"
    assert glued("og_fp8_8192_left") == f"{left(8, 8192) / 1e9:.2f}" == "2.07"
    assert int(left(8, 2048, 0.95) // KV_TOKEN) == 22_214 and glued("og_fp8_95_tok") == "22,214"
    assert [glued(f"og_{k}_gb") for k in ("bf16", "fp8", "w4a16")] == ["141.1", "72.7", "39.5"]
    assert glued("og_emb_head_gb") == f"{EMB_HEAD * 2 / 1e9:.2f}" == "4.20"


def nccl_fixed():  # NCCL 2.30.7 tuning.cc: ring LL base 6.6 us + 2 (n - 1) NVLink steps of 0.6 us, 2L calls
    return 2 * L * 1e-6 * (6.6 + 2 * 7 * 0.6)


def floor(wb, batch, tp=8):  # decode floor: weights (no embedding) + caches, or FLOPs; + ring bytes on NVLink
    rate = BF16 * (2 if wb == 1 else 1)
    kv_read = batch * 2 * L * max(KV // tp, 1) * HD * CTX * wb
    memory = ((P70 - V * D) * wb / tp + kv_read) / BW
    compute = (2 * (P70 - 2 * V * D) * batch + 2 * V * D * batch + 2 * L * 2 * H * CTX * HD * batch) / rate / tp
    return max(memory, compute) + 2 * L * 2 * (tp - 1) * (batch * D // tp) * 2 / NVLINK


def test_weight_reads_and_floors():
    assert f"{1e3 * (P70 - V * D) * 2 / 8 / BW:.2f}" == "5.19" == glued("tps_bf16_read")
    assert f"{1e3 * (P70 - V * D) / 8 / BW:.2f}" == "2.59" == glued("tps_fp8_read")
    assert f"{1e3 * floor(2, 1):.2f}" == glued("tps_bf16_floor") and floor(2, 1) > TARGET
    assert f"{1e3 * floor(1, 1):.2f}" == glued("tps_fp8_floor")


def test_all_reduce_and_largest_batch():
    assert f"{1e3 * nccl_fixed():.2f}" == "2.40" == glued("tps_fp8_nccl_ar")
    assert f"{1e3 * 2 * L * ONESHOT:.2f}" == "1.28" == glued("tps_fp8_oneshot_ar")
    assert floor(1, 1) + nccl_fixed() > TARGET and glued("tps_fp8_nccl_batch") == "0"
    assert glued("tps_bf16_oneshot_batch") == "0"
    batch = max(b for b in range(1, 400) if floor(1, b) + 2 * L * ONESHOT <= TARGET)
    assert batch == 31 and glued("tps_fp8_oneshot_batch") == "31"
    assert f"{1e6 * (TARGET - floor(1, 1)) / (2 * L):.1f}" == glued("tps_slack_us")


def spec_row(batch, alpha=0.8, k=4, c=0.05, mbu=0.5, tp=8):
    def step(q):
        kv = batch * 2 * L * (KV // tp) * HD * CTX  # FP8 cache, KV // tp heads a GPU
        read = (math.ceil(P70 / tp) + kv) / BW  # FP8 weights per GPU
        return max(read, 2 * P70 * batch * q / tp / (2 * BF16)) / mbu + 2 * L * ONESHOT
    tokens = (1 - alpha ** (k + 1)) / (1 - alpha)  # Leviathan et al. 2023, Eq. (1)
    v = step(k + 1) / step(1)
    up = tokens / (k * c + v)
    return step(1), up, up / step(1)


def test_speculative_rates_per_batch():
    assert glued("tps_spec_tokens") == "3.36"
    rows = {b: spec_row(b) for b in (1, 16, 64, 128, 256, 512)}
    for b, (dec, up, rate) in rows.items():
        assert glued(f"tps_spec_dec_{b}") == f"{1e3 * dec:.2f}"
        assert glued(f"tps_spec_up_{b}") == f"{up:.2f}"
        assert glued(f"tps_spec_rate_{b}") == f"{rate:.0f}"
    assert f"{1 / rows[1][0]:.0f}" == "152" and f"{rows[1][2]:.0f}" == "425"
    assert rows[1][1] == rows[128][1] > rows[256][1] > rows[512][1]  # the gain shrinks once compute-bound
    assert glued("tps_spec_max_batch") == "128" and rows[128][2] >= 200 > rows[256][2]


def test_sections_link_and_cite():
    nb = (BOOK / "deployment_plan.ipynb").read_text()
    for s in ("{ref}`weight_quantization-fp8-w4a16-w4a8`", "vllmmemoryprofile{_initialize_kv_caches, determine_available_memory}",
              "qa_padmanabhan_aiinfra{Q7}", "qa_imironman_bytedance{", "nebiuseagle3llama70b{", "trtllmoverlap{"):
        assert s in nb
    assert "(weight_quantization-fp8-w4a16-w4a8)=" in (BOOK / "weight_quantization.ipynb").read_text()


def test_oneshot_range_tp4_and_k7():
    assert 256 * 1024 // (D * 2) == 16 and glued("tps_oneshot_tokens") == "16" and glued("tps_oneshot_verify_batch") == "3"
    assert f"{(1 - 0.8 ** 8) / 0.2:.2f}" == glued("tps_spec_tokens_k7") == "4.16"
    dec4, _, rate4 = spec_row(1, tp=4)
    assert f"{1e3 * dec4:.2f}" == glued("tps_tp4_step") and f"{rate4:.0f}" == glued("tps_tp4_rate") == "235"
    best = {tp: max(b for b in range(1, 513) if spec_row(b, tp=tp)[2] >= 200) for tp in (4, 8)}
    assert best[4] == 21 and glued("tps_tp4_max") == "21" and glued("tps_tp4_node") == "42"
    assert glued("tps_tp8_max") == str(best[8]) and best[8] > 2 * best[4]
