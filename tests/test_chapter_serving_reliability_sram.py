"""Claims of serving_reliability's round-8 sections (SRAM-only design, grey failures), recomputed by hand.

Llama 3 70B's shape is written out from its config (tests/data/model_configs.json); the chip figures are
those the chapter cites (Groq LPU 230 MB SRAM at 80 TB/s; Cerebras WSE-3 44 GB; H100 80 GB, 3.35 TB/s).
"""
import math

import mha_kit as mk

VOCAB, D, LAYERS, H_KV, D_H, FFN = 128_256, 8192, 80, 8, 128, 28_672


def llama70_params():
    per_layer = D * D + 2 * D * H_KV * D_H + D * D + 3 * D * FFN + 2 * D  # q, k and v, o, SwiGLU, two norms
    return 2 * VOCAB * D + LAYERS * per_layer + D  # untied embedding and head, final norm


def test_param_count_matches_kit():
    assert llama70_params() == mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"])


def test_lpu_and_wafer_counts():
    p = llama70_params()
    assert math.ceil(p * 1 / 230e6) == 307  # 8-bit weights
    assert math.ceil(p * 2 / 230e6) == 614  # bf16 weights
    assert math.ceil(p * 1 / 44e9) == 2  # WSE-3 wafers at 8 bits
    assert math.ceil(p * 1 / 80e9) == 1  # one H100 holds the 8-bit weights, none to spare for a cache


def test_cache_of_one_8k_sequence_in_lpus():
    kv = 2 * LAYERS * H_KV * D_H * 2 * 8192  # K and V, bf16
    assert kv == mk.kv_cache_bytes(mk.MODEL_FACTS["llama-3-70b"].config, 8192)
    assert round(kv / 230e6) == 12


def test_batch1_floors():
    p = llama70_params()
    assert round(1e3 * p / 80e12, 2) == 0.88  # pipelined LPUs read every weight once, in turn
    kv = 2 * LAYERS * H_KV * D_H * 2 * 8192
    h100 = mk.GPUS["h100-sxm"]
    expected = (p / 8 + kv / 8) / h100.hbm_bandwidth  # TP 8: an eighth of weights and cache each
    got = mk.decode_memory_floor(mk.MODEL_FACTS["llama-3-70b"], h100, 8, 8192, 1, weight_fmt="fp8")[0]
    assert math.isclose(got, expected, rel_tol=1e-12)
    assert (8 * 80e9 - p) // kv == 212  # 8K sequences eight H100s hold beside 8-bit weights


def test_one_slow_gpu_sets_the_p99():
    replicas = 16
    assert 1 / replicas > 0.01  # more than 1% of requests land on the slow replica
    assert math.isclose((1 - 1 / 2) / replicas, 0.03125)
