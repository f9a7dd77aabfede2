"""Claims of the deployment sections, recomputed by hand: serving_operations-privacy (KV left in the pool),
multi_tenant_serving-spend-budgets (reserve at admission), serving_reliability-llm-evaluation (golden-set
noise) and serving_reliability-mlx (mlx-lm's default 4-bit format).

Llama 3 8B's shape is written out from its config (tests/data/model_configs.json). The prices are the
chapter's illustrative $3 / $15 / $0.30 per million tokens; LiteLLM holds 16,384 output tokens when a
request sets no max_tokens (docs/proxy/budget_reservation); mlx-lm's affine default is 4 bits per group of
64 with a scale and a bias in the input's dtype (mlx_lm/utils.py quantize_model; mlx quantize docstring).
"""
import math

import mha_kit as mk

VOCAB, D, LAYERS, H_KV, D_H, FFN = 128_256, 4096, 32, 8, 128, 14_336
LLAMA8 = mk.MODEL_FACTS["llama-3-8b"]


def llama8_params():
    per_layer = D * D + 2 * D * H_KV * D_H + D * D + 3 * D * FFN + 2 * D  # q, k and v, o, SwiGLU, two norms
    return 2 * VOCAB * D + LAYERS * per_layer + D  # untied embedding and head, final norm


def test_param_count_matches_kit():
    assert llama8_params() == mk.dense_decoder_params(LLAMA8)


def test_kv_left_in_one_h100_pool():
    per_tok = 2 * LAYERS * H_KV * D_H * 2  # K and V, bf16
    assert per_tok == mk.kv_cache_bytes_per_token(LLAMA8.config) == 128 * 1024
    assert round(8_000 * per_tok / 1e6) == 1_049
    pool = 0.9 * 80e9 - 2 * llama8_params()
    assert round(pool / 1e9) == 56
    assert round(pool / per_tok) == 426_784
    assert round(pool / (8_000 * per_tok)) == 53


def test_budget_reservation():
    hold = (2_000 * 3.0 + 1_000 * 15.0) / 1e6
    actual = (2_000 * 3.0 + 300 * 15.0) / 1e6
    no_cap = (2_000 * 3.0 + 16_384 * 15.0) / 1e6
    rates = dict(input_per_million=3.0, output_per_million=15.0, cached_input_per_million=0.3)
    assert math.isclose(hold, mk.request_cost(2_000, 0, 1_000, **rates))
    assert math.isclose(actual, mk.request_cost(2_000, 0, 300, **rates))
    assert (f"{hold:.4f}", f"{actual:.4f}", f"{no_cap:.4f}") == ("0.0210", "0.0105", "0.2518")
    assert f"{200 * actual:.2f}" == "2.10"  # the burst that passes a check of recorded spend
    admitted = int(1.00 // hold)
    assert admitted == 47 and admitted * hold <= 1.00 < (admitted + 1) * hold


def test_golden_set_noise():
    half = {n: 100 * 1.96 * math.sqrt(0.85 * 0.15 / n) for n in (100, 300, 1_000, 3_000)}
    assert [f"{half[n]:.1f}" for n in (100, 300, 1_000, 3_000)] == ["7.0", "4.0", "2.2", "1.3"]
    assert half[300] < 10 / math.sqrt(2) and half[300] > 2  # a ten-point drop shows, a two-point one does not


def test_mlx_default_bits_and_bound():
    bpw = 4 + (16 + 16) / 64  # 4-bit codes, a bf16 scale and a bf16 bias per group of 64
    assert bpw == mk.bits_per_weight(4, 64, scale_bits=16, zero_bits=16) == mk.bits_per_weight(4, 32) == 4.5
    weights = llama8_params() * bpw / 8
    assert round(weights / 1e9, 2) == 4.52  # the file
    read = (llama8_params() - VOCAB * D) * bpw / 8  # per token: the input table gives one row, not V x D
    assert round(read / 1e9, 2) == 4.22
    assert [round(bw / read) for bw in (273e9, 546e9, 800e9)] == [65, 129, 190]
