"""Claims of book/multi_tenant_serving.ipynb, recomputed with the products written out.

Sources of the hand numbers: Llama 3 8B and 70B shapes (Llama 3 paper Table 3 and the configs), the H100
SXM datasheet (80 GB, 3.35 TB/s), MLPerf's loadgen/mlperf.conf, Brysbaert 2019 and OpenAI's tokens rule of
thumb, Qwen2-VL sec. 2.1 and transformers' smart_resize, DeepSeek's day-6 inference-system overview.
"""
import math

import pytest

import mha_kit as mk

D8, FF8, L8, V = 4096, 14336, 32, 128256
D70, FF70, L70 = 8192, 28672, 80


def _llama_params(d, ff, layers, kv_dim):
    attention = d * d + 2 * d * kv_dim + d * d
    return 2 * V * d + layers * (attention + 3 * d * ff + 2 * d) + d


def test_rank16_adapter_is_26_mib_and_80_with_the_mlp():
    adapter = L8 * 16 * ((D8 + D8) + 2 * (D8 + 1024) + (D8 + D8)) * 2
    assert adapter == 26 * 2**20
    base = _llama_params(D8, FF8, L8, 1024) * 2
    with_mlp = adapter + L8 * 16 * (2 * (D8 + FF8) + (FF8 + D8)) * 2
    assert with_mlp == 80 * 2**20 and 0.004 < with_mlp / base < 0.006  # the table's "share of the base"
    # 64 distinct adapters read at 3.35 TB/s: about half a millisecond a step
    assert 64 * adapter / 3.35e12 == pytest.approx(0.52e-3, rel=0.01)


def test_all_5000_adapters_fit_a_dgx_host_memory_many_times():
    assert 5000 * 26 * 2**20 < 0.07 * 2 * 10**12


def test_break_even_and_utilisation_formula():
    # one replica of 8 GPUs at $2/h all day, API at $1 per million: 384 M tokens a day
    assert 8 * 2 * 24 / 1.0 * 1e6 == mk.break_even_tokens_per_day(1.0, 2.0, 8, 1683.0)
    # at 10% utilisation a token costs ten times as much
    assert mk.self_host_cost_per_million(2, 1683, 0.1) == pytest.approx(10 * mk.self_host_cost_per_million(2, 1683))


def test_reading_speed_tpot_and_mlperf_targets():
    assert 60 / (238 / 0.75) == pytest.approx(0.189, abs=0.001)
    assert 0.45 + 49 * 0.04 == pytest.approx(2.41)
    assert (mk.LATENCY_TARGETS["llama2-70b"].ttft_s, mk.LATENCY_TARGETS["llama2-70b"].tpot_s) == (2.0, 0.2)


def test_qwen2_vl_image_tokens_and_encoder_ratio():
    assert (224 // 28) ** 2 + 2 == mk.qwen2_vl_image_tokens(224, 224) == 66
    beta = math.sqrt(1080 * 1920 / 1_003_520)  # max_pixels = 14*14*4*1280
    assert math.floor(1080 / beta / 28) * math.floor(1920 / beta / 28) + 2 == mk.qwen2_vl_image_tokens(1080, 1920)
    # four 14-px patches per merged token through a 675M encoder, against an 8B model's layer weights per
    # token: an image token needs neither the embedding lookup nor the output head (2 V d left out)
    assert 4 * 675e6 / (_llama_params(D8, FF8, L8, 1024) - 2 * V * D8) == pytest.approx(0.387, abs=0.002)


def test_70b_weight_load_times():
    weights = _llama_params(D70, FF70, L70, 1024) * 2
    assert weights / 8e9 == pytest.approx(17.6, abs=0.1)  # one PCIe 4.0 x4 drive
    assert weights / (8 * 64e9) == pytest.approx(0.28, abs=0.01)  # eight GPUs over PCIe 5 from host memory
    assert len([1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))) == len(mk.vllm_capture_sizes(512))


def test_routed_and_cascade_cost():
    assert mk.routed_cost(0.75, 1.0, 3.0) / 3.0 == pytest.approx(0.5)
    assert mk.routed_cost(0.75, 1.0, 3.0, cascade=True) / 3.0 == pytest.approx((1 + 0.75) / 3)


def test_halving_tpot_is_cheap_then_expensive():
    def cost(target):
        plan = mk.largest_batch_within_tpot("llama-3-70b", "h100-sxm", tp=8, context_len=4096, tpot_target=target)
        return 1 / plan.tokens_per_s_per_gpu

    assert 1 < cost(0.012) / cost(0.024) < 1.5
    assert cost(0.006) / cost(0.012) > 4


def test_deepseek_day_reproduces():
    cost = 226.75 * 8 * 2 * 24
    revenue = (342e9 * 0.14 + (608e9 - 342e9) * 0.55 + 168e9 * 2.19) / 1e6
    assert cost == 87_072
    assert revenue == pytest.approx(562_027, rel=1e-3)
    nodes = 608e9 / (73.7e3 * 86_400) + 168e9 / (14.8e3 * 86_400)
    assert nodes == pytest.approx(226.75, abs=0.5)
    assert 2 / 3600 / (14.8e3 / 8) * 1e6 == pytest.approx(0.300, abs=0.001)
    assert (256 + 32) / 32 == 9 and (256 + 32) / 144 == 2 and 4 * 8 == 32 and 18 * 8 == 144


def test_lora_slots_come_out_of_the_cache():
    """Every row on its own adapter: max_loras slots of rank 16 on all seven projections beside the sequences."""
    kv_seq = 2 * L8 * 1024 * 2 * 4096  # keys and values, 8 heads of 128, bf16, 4,096 tokens: 512 MiB
    slot = L8 * 16 * ((D8 + D8) + 2 * (D8 + 1024) + (D8 + D8) + 2 * (D8 + FF8) + (FF8 + D8)) * 2
    assert kv_seq == 512 * 2**20 and slot == 80 * 2**20
    free = 80 * 10**9 - _llama_params(D8, FF8, L8, 1024) * 2
    assert free // kv_seq == 119  # no adapters: the memory limit, the batch the chapter starts from
    assert free // (kv_seq + slot) == 103  # 103 slots of 80 MiB take the room of 16 sequences
    plan = mk.plan_deployment("llama-3-8b", "h100-sxm", num_gpus=1, tp=1, context_len=4096, batch_size=119)
    assert plan.decode_step_s < 0.040  # the 40 ms target does not bind: the batch is memory-bound


def test_packed_private_copies():
    base = _llama_params(D8, FF8, L8, 1024) * 2
    kv_seq = 512 * 2**20
    assert 80 * 10**9 // (base + kv_seq) == 4 and math.ceil(5000 / 4) == 1250
    assert 80 * 10**9 // (base // 2 + kv_seq) == 9 and math.ceil(5000 / 9) == 556


def test_blended_break_even_on_deepseeks_day():
    ratio = 608e9 / 168e9  # prompt tokens per output token
    bill = ratio * 0.55 + 2.19  # R1's list prices, cache misses
    assert round(ratio, 1) == 3.6 and round(bill, 2) == 4.18
    assert round(8 * 2.0 * 24 / bill) == 92  # M output tokens a day for one 8-GPU replica at $2 per GPU-hour


def test_allreduce_latency_puts_6ms_out_of_reach():
    extra = 2 * L70 * 10e-6  # 160 all-reduces at an assumed 10 us
    floor = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=4096, batch_size=1)
    assert extra == pytest.approx(1.6e-3) and floor.decode_step_s + extra > 0.006
    assert floor.decode_step_s < 0.006  # by bytes alone, one sequence would meet it


def test_qwen2_vl_1080p_at_the_shipped_cap_and_deepseek_peak():
    assert round(1080 / 28) * round(1920 / 28) + 2 == 2693  # not downscaled under max_pixels 12,845,056
    assert round(278 / 226.75, 2) == 1.23


def test_on_device_twelve_tile_cache_in_bf16_and_8_bit():
    # 12 InternVL tiles plus a thumbnail, 256 tokens each; Llama 3 8B: 32 layers, 8 KV heads of 128, K and V
    tokens = (12 + 1) * 256
    per_token_bf16 = 2 * L8 * 8 * 128 * 2
    assert mk.internvl_image_tokens(12) == tokens
    assert tokens * per_token_bf16 / 2**20 == 416
    assert tokens * per_token_bf16 // 2 / 2**20 == 208
    l8 = mk.MODEL_FACTS["llama-3-8b"].config
    assert mk.kv_cache_bytes(l8, 1, fmt="int8") * 2 == mk.kv_cache_bytes(l8, 1)


def test_voice_budget_adds_up():
    # Llama 3 8B, bf16, batch 1 on an H100 (3.35 TB/s): a decode step reads the weights and a 2,030-token cache.
    weights = _llama_params(D8, FF8, L8, 1024) * 2
    cache = 2030 * L8 * 2 * 1024 * 2
    tpot = (weights + cache) / 3.35e12
    prefill = mk.prefill_seconds(mk.MODEL_FACTS["llama-3-8b"], 2030, 989e12)
    total = 0.500 + 0.100 + prefill + 12 * tpot + 0.150 + 0.100
    assert f"{1e3 * tpot:.1f}" == "4.9" and f"{1e3 * prefill:.1f}" == "29.7"
    assert round(1e3 * total) == 938 and f"{0.5 / total:.0%}" == "53%"
    assert round(1e3 * (prefill + 12 * tpot)) == 88


def test_qwen2_vl_encoder_share_by_language_model_size():
    """multi_tenant_serving-multimodal: one 675M ViT (Qwen2-VL Table 1) against LMs of 1.5B, 7.6B, 72B."""
    vit = 675_000_000
    assert mk.QWEN2_VL_VIT_PARAMS == vit
    ratios = [2 * vit * 4 / (2 * lm) for lm in (1.5e9, 7.6e9, 72e9)]  # four patches per merged token
    assert [f"{r:.2f}" for r in ratios] == ["1.80", "0.36", "0.04"]
    assert f"{4 * 0.675 / 1.5:.1f}" == "1.8" and f"{4 * 0.675 / 72:.2f}" == "0.04"


def test_lora_on_int4_q_proj_share():
    # Llama 3 8B q_proj is 4096 x 4096; rank-16 A (4096 x 16) and B (16 x 4096) in bf16, base in int4
    adapter = 16 * 4096 * 2 + 16 * 4096 * 2
    base = 4096 * 4096 // 2
    assert adapter == 256 * 1024 and base == 8 * 1024 * 1024
    assert round(adapter / base, 3) == 0.031
    assert round(2 * 16 * 4096 / (4096 * 4096), 4) == 0.0078  # FLOPs: 2 d r MACs against d^2


def test_merge_against_bf16_target_costs_no_more_than_keeping_apart():
    import numpy as np

    rng = np.random.default_rng(4)
    W = rng.standard_normal((256, 128)) * 0.02
    A = rng.standard_normal((256, 16)) * 0.01
    B = rng.standard_normal((16, 128)) * 0.01
    x = rng.standard_normal((8, 256))

    def q4(w):
        s = np.abs(w).max(axis=0) / 7
        return np.clip(np.round(w / s), -8, 7) * s

    target = x @ W + (x @ A) @ B
    merged, apart = x @ q4(W + A @ B), x @ q4(W) + (x @ A) @ B
    err = lambda a, b: np.linalg.norm(a - b) / np.linalg.norm(b)  # noqa: E731
    assert abs(err(merged, target) - err(apart, target)) < 0.01  # both about the base's rounding error
    assert err(merged, apart) > 3 * err(target, x @ W)  # QLoRA case: merging adds noise above the effect
