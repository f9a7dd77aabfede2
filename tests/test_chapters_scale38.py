"""Claims of the issue-38 sections in context_parallelism, moe_serving, disaggregated_serving, mla_serving and
tensor_parallel, recomputed from written-out products (never read back from the notebooks)."""
import math

import numpy as np
import pytest

import mha_kit as mk

LLAMA70 = mk.MODEL_FACTS["llama-3-70b"]
V3 = mk.MODEL_FACTS["deepseek-v3"]
H100_BF16 = 989e12


def _weights_flops_per_token(facts):
    cfg = facts.config
    return 2 * cfg.num_layers * (mk.projection_params(cfg) + 3 * cfg.d_model * facts.intermediate_size)


def test_128k_prefill_terms_and_time():
    n = 131072
    attention = 80 * 4 * 64 * 128 * n * (n + 1) // 2  # 4 h d_h per causal pair, n(n+1)/2 pairs, 80 layers
    weights = n * _weights_flops_per_token(LLAMA70) + 2 * 128256 * 8192
    assert mk.prefill_flops(LLAMA70, n) == attention + weights
    assert attention > weights  # the quadratic term dominates at 128K
    assert 3.9e16 < attention + weights < 4.2e16
    ttft = (attention + weights) / (0.5 * 8 * H100_BF16)
    assert 9.5 < ttft < 11  # "about 10 s at 50% MFU on one node"
    assert (attention + weights) / (0.5 * 16 * H100_BF16) == pytest.approx(ttft / 2)  # CP over 2 nodes


def test_chunked_prefill_does_not_cut_flops_but_a_prefix_hit_does():
    n, chunk = 131072, 8192
    chunks = sum(mk.prefix_prefill_flops(LLAMA70, s, chunk) for s in range(0, n, chunk))
    assert chunks == mk.prefill_flops(LLAMA70, n) + 15 * 2 * 128256 * 8192  # one extra logits row a chunk
    hit = mk.prefix_prefill_flops(LLAMA70, n - chunk, chunk)
    assert hit < mk.prefill_flops(LLAMA70, n) / 8


def test_ulysses_against_ring_numbers():
    cfg, mib = LLAMA70.config, 2 ** 20
    assert mk.ulysses_all_to_all_bytes(cfg, 131072, 8) == 7 * 16384 * (2 * 64 + 2 * 8) * 128 // 8 * 2 == 504 * mib
    assert mk.ring_attention_bytes(cfg, 131072, 8) == 7 * 16384 * 2 * 8 * 128 * 2 == 448 * mib
    mha = mk.AttentionConfig(d_model=8192, num_heads=64, num_kv_heads=64, head_dim=128, num_layers=80)
    assert mk.ulysses_all_to_all_bytes(mha, 131072, 8) == 896 * mib
    with pytest.raises(ValueError, match="num_kv_heads"):
        mk.ulysses_all_to_all_bytes(cfg, 131072, 16)


def test_pipeline_numbers():
    assert mk.pipeline_bubble_fraction(4, 1) == 3 / 4
    assert 0.15 < mk.pipeline_bubble_fraction(4, 16) == 3 / 19 < 0.17  # "a sixth"
    assert mk.elements_to_bytes(64 * 16384, "bf16") == 2 * 2 ** 20  # a decode hop of batch 64, 405B


def test_xpyd_splits():
    flops = 8 * H100_BF16

    def split(inp, out):
        prefill_rate = inp / (mk.prefill_flops(LLAMA70, inp) / flops / 0.5)
        fleet = mk.gpus_for_rate(LLAMA70, "h100-sxm", 8, inp + out // 2, 10, out, 0.05)
        return mk.pd_instances(10, inp, out, prefill_rate, fleet.batch / fleet.tpot_s)

    x, y = split(8000, 200)
    assert (math.ceil(x), math.ceil(y)) == (3, 1)
    x, y = split(500, 2000)
    assert (math.ceil(x), math.ceil(y)) == (1, 1) and x < 0.2


def test_mla_against_gqa_cache():
    v3 = V3.config
    assert mk.kv_elements_per_token(v3) == 512 + 64
    gqa8 = mk.AttentionConfig(d_model=7168, num_heads=128, num_kv_heads=8, head_dim=128, num_layers=61)
    assert mk.kv_elements_per_token(gqa8) == 2 * 8 * 128
    assert (512 + 64) / (2 * 128) == 2.25  # DeepSeek-V2 Table 1: GQA with 2.25 groups
    assert mk.kv_cache_bytes_per_token(v3) == 576 * 61 * 2


def test_shared_and_routed_expert_numbers():
    assert mk.expert_params(V3) == 3 * 7168 * 2048
    assert 256 * 8 / 256 == 8.0  # rows per routed expert in a 256-token step
    assert V3.moe_layers * 3 * 7168 * 2048 == pytest.approx(2.55e9, rel=0.01)  # one FP8 byte a parameter
    attention = 61 * mk.projection_params(V3.config)
    assert attention / mk.model_params(V3) < 0.02


def test_eplb_plan_beats_none_and_a_stale_plan_loses():
    e, gpus, zipf = 256, 32, 1.0 / np.arange(1, 257) ** 0.6
    rng = np.random.default_rng(5)
    popular = rng.permutation(zipf)
    window = np.bincount(mk.route_tokens(16384, e, 8, rng, popularity=popular).ravel(), minlength=e)
    copies = mk.eplb_replicate(window, e + 32)
    slot_expert = np.repeat(np.arange(e), copies)
    slot_gpu = mk.eplb_pack(window[slot_expert] / copies[slot_expert], gpus)

    def planned(choices):
        per_expert = np.bincount(choices.ravel(), minlength=e)
        loads = np.bincount(slot_gpu, weights=per_expert[slot_expert] / copies[slot_expert], minlength=gpus)
        return loads.max() / loads.mean()

    step = mk.route_tokens(2048, e, 8, rng, popularity=popular)
    drifted = mk.route_tokens(2048, e, 8, rng, popularity=rng.permutation(zipf))
    plain = mk.rank_loads(step, e, gpus)
    assert planned(step) < 1.2 < plain.max() / plain.mean() < planned(drifted)


def test_capacity_drops_at_1_25():
    rng = np.random.default_rng(11)
    uniform = mk.route_tokens(2048, 256, 8, rng)
    skewed = mk.route_tokens(2048, 256, 8, rng, popularity=1.0 / np.arange(1, 257) ** 0.6)
    assert mk.capacity_dropped_fraction(uniform, 256, 1.25) < 0.01
    assert mk.capacity_dropped_fraction(skewed, 256, 1.25) > 0.15
