"""Claims of the fleet-serving sections (heterogeneous fleet, MBU/MFU, prefill-only, spot, edge, query of death,
checkpoint regression, many models, weight pulls, SJF prediction, early exit, code completion), recomputed
from the model's shape and the datasheets, not read back from the notebooks."""
from collections import OrderedDict

import numpy as np
import pytest

import mha_kit as mk

# Llama-3-8B (tests/data/model_configs.json): 32 layers, 8 KV heads of 128, vocabulary 128,256, d 4,096.
P8 = 8_030_261_248
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # K and V, bf16: 131,072 bytes
H100_BW, H100_FLOPS = 3.35e12, 989e12


def test_parameter_count_and_cache():
    assert mk.model_params(mk.MODEL_FACTS["llama-3-8b"]) == P8
    assert mk.kv_cache_bytes(mk.MODEL_FACTS["llama-3-8b"].config, 2048) == KV_PER_TOKEN * 2048


def test_mbu_and_mfu_example():
    read = 2 * P8 - 2 * 128_256 * 4096 + KV_PER_TOKEN * 2048  # the input embedding table is not read whole
    assert round(read / 1e9, 2) == 15.28
    assert round(read / 0.010 / H100_BW, 2) == 0.46  # "MBU 46%"
    step8 = 2 * P8 - 2 * 128_256 * 4096 + 8 * KV_PER_TOKEN * 2048  # batch 8 in 12 ms: 43% of the bandwidth
    assert round(step8 / 0.012 / H100_BW, 2) == 0.43
    assert round(2 * P8 * 2048 / 0.090 / H100_FLOPS, 2) == 0.37  # "a little over a third"


def test_heterogeneous_ratios():
    assert round(989e12 / 312e12, 1) == 3.2  # H100 against A100 bf16 FLOP/s
    assert round(3.35e12 / 2.039e12, 1) == 1.6  # H100 against A100-80G bandwidth


def test_prefill_only_rate():
    assert round(0.5 * H100_FLOPS / (2 * P8) / 512) == 60  # requests/s per GPU at MFU 50%


def test_spot_edge_and_replays():
    assert 4000 * 0.030 == pytest.approx(120.0)  # a 4,000-token answer: the whole AWS notice, 4x GCP's 30 s
    q4 = P8 * 4.5 / 8
    assert round(204.8e9 / q4) == 45 and round(204.8e9 / q4 / 30, 1) == 1.5
    assert 2 * P8 > 10e9 > q4  # bf16 over the 10 GB disk budget, 4-bit under it
    assert 2**6 < 100 <= 2**7  # seven halvings isolate one of 100


def test_checkpoint_regression_direction():
    # Batch by memory alone on 80 GB beside 16 GB of weights, at 1,024 and 4,608 tokens of context.
    free = 80e9 - 2 * P8
    short, long_ = int(free // (KV_PER_TOKEN * 1024)), int(free // (KV_PER_TOKEN * 4608))
    rate = [b / ((2 * P8 + b * KV_PER_TOKEN * c) / H100_BW) for b, c in ((short, 1024), (long_, 4608))]
    assert rate[1] / rate[0] < 2000 / 5000  # longer answers cost more than the question's fall


def test_code_completion_budget():
    layer_params = P8 - 2 * 128_256 * 4096  # embeddings and head out of the per-token products
    assert 2 * layer_params * 4096 / H100_FLOPS > 0.050  # the 4K context's prefill: over half the 100 ms budget
    expected = (1 - 0.62**6) / (1 - 0.62)  # E[tokens per step] at alpha 0.62, k = 5
    assert expected >= 2.46 > (1 - 0.61**6) / (1 - 0.61)


def test_early_exit_in_a_batch():
    assert round(40 / (40 - 28 * 0.8), 2) == 2.27
    assert round(40 / (40 - 28 * 0.8**16), 2) == 1.02


def test_weight_pull_from_one_store():
    assert 50 * 140e9 / 25e9 == pytest.approx(280.0)
    assert 140e9 / 12.5e9 + 49 * 256 * 2**20 / 12.5e9 < 13


def test_ranking_keeps_most_of_sjf():
    rng = np.random.default_rng(2)
    true_len = rng.integers(10, 2000, size=40)
    predicted = true_len * rng.lognormal(0, 0.3, 40)

    def mean_wait(order):
        served = true_len[order]
        return float(np.mean(np.cumsum(served) - served))

    fcfs, sjf, ranked = (mean_wait(np.arange(40)), mean_wait(np.argsort(true_len, kind="stable")),
                         mean_wait(np.argsort(predicted, kind="stable")))
    assert (fcfs - ranked) / (fcfs - sjf) > 0.8


def test_lfu_keeps_the_head_better_than_lru():
    rng = np.random.default_rng(0)
    popularity = 1 / np.arange(1, 101) ** 1.1
    stream = rng.choice(100, size=1000, p=popularity / popularity.sum())

    def cold(policy, slots=16):
        lru, count, last, misses = OrderedDict(), {}, {}, 0
        for t, m in enumerate(stream):
            count[m] = count.get(m, 0) + 1
            if m not in lru:
                misses += 1
                if len(lru) == slots:
                    victim = (next(iter(lru)) if policy == "lru"
                              else min(lru, key=lambda k: (count[k], last[k])))
                    del lru[victim]
            lru[m] = True
            lru.move_to_end(m)
            last[m] = t
        return misses / len(stream)

    assert cold("lfu") < cold("lru")
