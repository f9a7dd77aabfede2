"""mha_kit.tenancy against its sources: LoRA's shapes, Qwen2-VL's worked example, DeepSeek's day-6 figures."""
import math

import pytest

import mha_kit as mk

LLAMA8 = mk.MODEL_FACTS["llama-3-8b"]


def test_lora_bytes_written_out():
    # Llama 3 8B: d 4096, 32 heads x 128, 8 KV heads x 128, 32 layers; rank 16 on q, k, v, o in bf16
    per_layer = 16 * ((4096 + 4096) + (4096 + 1024) + (4096 + 1024) + (4096 + 4096))
    assert mk.lora_adapter_bytes(LLAMA8, 16) == 32 * per_layer * 2
    mlp = 16 * ((4096 + 14336) * 2 + (14336 + 4096))
    assert mk.lora_adapter_bytes(LLAMA8, 16, targets=mk.LORA_TARGETS) == 32 * (per_layer + mlp) * 2
    assert mk.lora_adapter_bytes(LLAMA8, 16, fmt="fp8") * 2 == mk.lora_adapter_bytes(LLAMA8, 16)


def test_lora_errors():
    with pytest.raises(ValueError, match="targets"):
        mk.lora_adapter_bytes(LLAMA8, 16, targets=("qkv",))
    with pytest.raises(ValueError, match="dense ModelFacts"):
        mk.lora_matrix_shapes(mk.MODEL_FACTS["deepseek-v3"])
    with pytest.raises(ValueError, match="rank"):
        mk.lora_adapter_bytes(LLAMA8, 0)


def test_self_host_cost_and_break_even():
    assert mk.self_host_cost_per_million(3.6, 1000) == pytest.approx(1.0)  # $0.001/s over 1,000 tok/s
    assert mk.self_host_cost_per_million(3.6, 1000, utilisation=0.25) == pytest.approx(4.0)
    # 8 GPUs at $2/h all day = $384; at $1/Mtok that buys 384 Mtok
    assert mk.break_even_tokens_per_day(1.0, 2.0, 8, 1000) == pytest.approx(384e6)
    assert mk.break_even_tokens_per_day(0.1, 3.6, 1, 1000) is None  # a busy GPU costs $1/Mtok > $0.1
    with pytest.raises(ValueError, match="utilisation"):
        mk.self_host_cost_per_million(2, 1000, utilisation=0)
    with pytest.raises(ValueError, match="price_per_gpu_hour"):
        mk.self_host_cost_per_million(-1, 1000)


def test_largest_batch_within_tpot_is_the_edge():
    plan = mk.largest_batch_within_tpot("llama-3-70b", "h100-sxm", tp=8, context_len=4096, tpot_target=0.015)
    assert plan.decode_step_s <= 0.015
    over = mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=4096,
                              batch_size=plan.batch_size + 1)
    assert over.decode_step_s > 0.015
    with pytest.raises(ValueError, match="no batch meets"):
        mk.largest_batch_within_tpot("llama-3-70b", "h100-sxm", tp=8, context_len=4096, tpot_target=0.001)


def test_routed_cost():
    assert mk.routed_cost(0.75, 1.0, 10.0) == pytest.approx(0.75 + 2.5)
    assert mk.routed_cost(0.75, 1.0, 10.0, cascade=True) == pytest.approx(1.0 + 2.5)
    with pytest.raises(ValueError, match="small_fraction"):
        mk.routed_cost(1.5, 1.0, 10.0)


def test_qwen2_vl_tokens_paper_example():
    assert mk.qwen2_vl_image_tokens(224, 224) == 66  # Qwen2-VL sec. 2.1: 64 visual tokens + 2 special
    assert mk.qwen2_vl_image_tokens(448, 448) == 16 * 16 + 2
    # 1080 x 1920 exceeds the default area: scaled to floor(1080/b/28)*28 x floor(1920/b/28)*28
    beta = math.sqrt(1080 * 1920 / (14 * 14 * 4 * 1280))
    h, w = math.floor(1080 / beta / 28), math.floor(1920 / beta / 28)
    assert mk.qwen2_vl_image_tokens(1080, 1920) == h * w + 2
    assert mk.qwen2_vl_image_tokens(28, 28) == (56 // 28) ** 2 + 2  # raised to min_pixels 56 x 56
    with pytest.raises(ValueError, match="at least 28"):
        mk.qwen2_vl_image_tokens(20, 400)


def test_deepseek_day_six_figures():
    day = mk.DEEPSEEK_FLEET_DAY
    assert day.cost == 87_072  # the overview's daily cost
    assert day.revenue == pytest.approx(562_027, rel=1e-3)  # rounded token counts: within 0.1%
    assert day.revenue / day.cost - 1 == pytest.approx(5.45, abs=0.01)  # "cost profit margin of 545%"
    assert mk.expert_slots_per_gpu(256, 32, 32) == 9 and mk.expert_slots_per_gpu(256, 32, 144) == 2
    assert [u.gpus for u in mk.DEEPSEEK_UNITS.values()] == [32, 144]
    with pytest.raises(ValueError, match="multiple of ep"):
        mk.expert_slots_per_gpu(256, 0, 144)


def test_mlperf_targets():
    t = mk.LATENCY_TARGETS["llama2-70b"]
    assert (t.ttft_s, t.tpot_s, t.percentile) == (2.0, 0.2, 99)  # p99 TTFT and p99 TPOT, each under its limit
    assert mk.LATENCY_TARGETS["llama2-70b-interactive"].tpot_s == 0.04


def test_constants_from_their_sources():
    assert mk.QWEN2_VL_VIT_PARAMS == 675 * 10**6
    assert mk.SILENT_READING_WPM == 238 and mk.WORDS_PER_TOKEN == 75 / 100


def test_allreduce_latency_per_step():
    # Llama 3 70B: 80 layers, two all-reduces each (after attention, after the MLP), 10 us apiece
    assert mk.allreduce_latency_per_step(80, 8, 10e-6) == pytest.approx(160 * 10e-6)
    assert mk.allreduce_latency_per_step(80, 1, 10e-6) == 0.0  # one GPU: no all-reduce
    with pytest.raises(ValueError, match="per_call_s must be a non-negative"):
        mk.allreduce_latency_per_step(80, 8, -1e-6)
    with pytest.raises(ValueError, match="tp"):
        mk.allreduce_latency_per_step(80, 0, 1e-6)


def test_qwen2_vl_at_the_checkpoint_cap():
    # preprocessor_config.json of the released checkpoints: max_pixels 12845056 = 16384 tokens of 28 x 28 px
    assert mk.QWEN2_VL_CHECKPOINT_MAX_PIXELS == 12_845_056
    # 1920 x 1080 then fits under the cap: sides rounded to multiples of 28, 39 x 69 merged tokens + 2
    assert round(1080 / 28) * 28 == 1092 and round(1920 / 28) * 28 == 1932 and 1092 * 1932 < 12_845_056
    assert mk.qwen2_vl_image_tokens(1080, 1920, max_pixels=mk.QWEN2_VL_CHECKPOINT_MAX_PIXELS) == 39 * 69 + 2 == 2693


def test_deepseek_peak_and_the_node_identity():
    day = mk.DEEPSEEK_FLEET_DAY
    assert day.peak_nodes == 278 and day.peak_nodes / day.average_nodes == pytest.approx(1.226, abs=1e-3)
    prefill, decode = day.node_days_needed  # day averages: the sum returns the node count to 0.1%
    assert prefill + decode == pytest.approx(day.average_nodes, rel=2e-3)
