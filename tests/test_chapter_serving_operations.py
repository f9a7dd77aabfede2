"""The claims of book/serving_operations.ipynb, recomputed independently."""
import numpy as np
import pytest

import mha_kit as mk

# Llama 3 8B: 8,030,261,248 weights, of which the 128,256 x 4,096 embedding table is a lookup
P8, EMB = 8_030_261_248, 128_256 * 4096
BW, BF16 = 3.35e12, 989e12
MIX = [500] * 9 + [8000]


def test_tail_of_ten_calls():
    assert 1 - 0.99**10 == pytest.approx(0.0956, abs=1e-4)


def test_design_floor_in_gpus():
    assert mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"]) == P8
    per_token = 2 * (P8 - EMB)
    base = 2000 * (2000 + 200 + 200) * per_token / BF16
    cached = 2000 * (200 + 200) * per_token / BF16
    assert base == pytest.approx(72.8, abs=0.1) and cached == pytest.approx(base / 6)


def test_prefill_floor_of_a_long_document():
    step = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])
    assert step(8000, 0, 0) == pytest.approx(2 * (P8 - EMB) * 8000 / BF16, rel=1e-9)  # compute-bound
    assert step(8000, 0, 0) == pytest.approx(0.1214, abs=1e-4)


def test_chunking_cuts_the_worst_gap_and_goodput_is_below_saturated_throughput():
    step = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])
    reqs = mk.poisson_requests(20, 400, MIX, 200, seed=5)
    whole = mk.simulate_batching(reqs, step, 8192, max_seqs=256)
    chunks = mk.simulate_batching(reqs, step, 1024, max_seqs=256)
    assert max(r.max_itl for r in whole) > 0.1 > 0.03 > max(r.max_itl for r in chunks)
    light = mk.simulate_batching(mk.poisson_requests(15, 600, MIX, 200, seed=0), step, 8192, max_seqs=256)
    heavy = mk.simulate_batching(mk.poisson_requests(50, 2000, MIX, 200, seed=0), step, 8192, max_seqs=256)
    assert mk.slo_attainment(light, 1.0, 0.05) >= 0.9 > 0.5 > mk.slo_attainment(heavy, 1.0, 0.05)


def test_large_batches_give_more_tokens_per_gpu():
    small, large = (mk.plan_deployment("llama-3-8b", "h100-sxm", num_gpus=1, tp=1, context_len=1200, batch_size=b)
                    for b in (16, 256))
    assert large.tokens_per_s_per_gpu > 5 * small.tokens_per_s_per_gpu and large.tpot_s > 3 * small.tpot_s


def test_streaming_wait_is_the_ttft():
    step = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])
    alone = mk.simulate_batching([(0.0, 1000, 500)], step, token_budget=8192)[0]
    assert alone.finish == pytest.approx(alone.ttft + 499 * alone.tpot)
    assert alone.finish > 100 * alone.ttft
    assert np.isclose(alone.ttft, step(1000, 0, 0))


def test_w8a8_prefill_lever():
    """serving_operations levers: a 2,200-token prefill of Llama 3 8B at the bf16 and the FP8 peak (H100 SXM)."""
    d, layers, h, d_h, h_kv, d_ff, vocab, n = 4096, 32, 32, 128, 8, 14336, 128_256, 2200
    per_layer = 2 * d * h * d_h + 2 * d * h_kv * d_h + 3 * d * d_ff  # projections and SwiGLU
    flops = 2 * n * layers * per_layer + 2 * vocab * d + layers * 2 * h * d_h * n * (n + 1)
    assert f"{flops / BF16 * 1e3:.0f}" == "32" and f"{flops / 1979e12 * 1e3:.0f}" == "16"


def test_all_reduces_per_decode_step():
    assert [2 * layers for layers in (32, 80, 126)] == [64, 160, 252]  # Llama 3 8B, 70B, 3.1 405B
    assert [mk.MODEL_FACTS[n].config.num_layers for n in ("llama-3-8b", "llama-3-70b", "llama-3.1-405b")] == [32, 80, 126]


def test_tpot_first_chunk_bias():
    """serving_operations-tpot-tools: 123 tokens in chunks of 3, one chunk every 60 ms after the first."""
    window_ms = (123 // 3 - 1) * 60  # E2E - TTFT: the 40 chunks after the first
    assert window_ms == 2400
    assert round(window_ms / (123 - 1), 1) == 19.7  # vLLM TPOT, AIPerf's default ITL
    assert window_ms / (123 - 3) == 20.0  # AIPerf --per-chunk-usage: minus the first chunk's 3 tokens
