"""Numbers added after a second reading, recomputed by hand: cuda_basics (outer product), deployment_plan
(TPU and Trainium replicas), gpu_kernels (L40S), long_context_structure (window tiles), serving_operations
(p99 case), tensor_parallel (KV transfer of an 8K prompt)."""
import json
from pathlib import Path

import numpy as np
import pytest

import mha_kit as mk

MODELS = {m["name"]: m for m in json.loads((Path(__file__).parent / "data" / "model_configs.json").read_text())["models"]}


def test_outer_product_intensity_and_kernel_indexing():
    m = n = 8192
    assert m * n / (4 * (m + n + m * n)) == pytest.approx(0.25, abs=1e-3)  # one multiply, fp32 bytes
    # the kernel's mapping: j from x (column), i from y (row), rounded-up grid, bounds check
    a, b = np.arange(1.0, 38.0), np.arange(1.0, 71.0)
    C = np.zeros((37, 70))
    for by in range(-(-37 // 8)):
        for bx in range(-(-70 // 32)):
            for ty in range(8):
                for tx in range(32):
                    i, j = by * 8 + ty, bx * 32 + tx
                    if i < 37 and j < 70:
                        C.reshape(-1)[i * 70 + j] = a[i] * b[j]
    assert np.array_equal(C, np.outer(a, b))


def test_tpu_and_trainium_replicas_for_llama3_70b():
    weights = 2 * mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"])  # bf16
    assert 140e9 < weights < 142e9
    gib = 2**30
    expect = {"tpu-v6e": (32, 8), "tpu7x": (192, 1), "trainium2": (96, 2), "inferentia2": (32, 8), "tpu-v5p": (95, 2)}
    for key, (mem_gib, chips) in expect.items():
        need = weights / (0.7 * mem_gib * gib)  # the chapter's rule: weights at most 70% of each chip
        assert 2 ** int(np.ceil(np.log2(max(1.0, np.ceil(need))))) == chips
        assert mk.chips_for_weights(weights, mk.CHIP_MEMORY[key].memory_bytes) == chips


def test_l40s_against_h100_bandwidth():
    assert 3.35e12 / 864e9 == pytest.approx(3.88, abs=0.01)  # data sheets: H100 SXM 3.35 TB/s, L40S 864 GB/s
    assert mk.GPUS["h100-sxm"].hbm_bandwidth / mk.CHIP_MEMORY["l40s"].bandwidth == pytest.approx(3.35e12 / 864e9)


def test_window_tiles_by_brute_force():
    n, tile, window = 2048, 128, 256
    q, k = np.arange(n)[:, None], np.arange(n)[None, :]
    causal = (k <= q).reshape(16, tile, 16, tile).any(axis=(1, 3)).sum()
    band = ((k <= q) & (k > q - window)).reshape(16, tile, 16, tile).any(axis=(1, 3)).sum()
    assert (causal, band) == (136, 45)  # 16 * 17 / 2 tiles on or below the diagonal; the band's 16 + 15 + 14


def test_p99_case_queueing_numbers():
    assert round(8.0 / 0.6) == 13
    assert 0.9 / (1 - 0.9) == pytest.approx(9.0) and mk.mm1_wait(0.9) == pytest.approx(9.0)
    assert 0.7 / (1 - 0.7) == pytest.approx(2.333, abs=1e-3)
    assert 0.9 / 0.7 == pytest.approx(1.29, abs=0.005)  # replicas at a 70% target against 90%


def test_kv_transfer_of_an_8k_prompt():
    cfg = MODELS["Meta Llama 3 70B"]
    kv = 2 * cfg["num_layers"] * cfg["num_kv_heads"] * cfg["head_dim"] * 2 * 8192  # K and V, bf16
    assert kv == 80 * 8 * 128 * 4 * 8192 == mk.kv_cache_bytes(mk.PRESETS["llama-3-70b"], 8192)
    assert kv / 50e9 * 1e3 == pytest.approx(53.7, abs=0.1)  # one 400 Gb/s NIC
    assert kv / (10e9 / 8) == pytest.approx(2.15, abs=0.01)  # one 10 Gb/s TCP stream
