"""The engine-core section of book/serving_operations.ipynb, recomputed with the products written out."""
import pytest

import mha_kit as mk

P8 = 8_030_261_248  # Llama 3 8B parameters, embeddings and untied head included
BW = 3.35e12  # H100 SXM


def test_parameter_count():
    assert mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"]) == P8


def test_batch_one_decode_step_is_about_five_ms():
    weights = P8 * 2 / BW  # bf16 weights read once
    kv = 32 * 2 * 8 * 128 * 2 * 1000 / BW  # 32 layers, K and V, 8 heads of 128, bf16, 1,000 tokens
    assert 1e3 * (weights + kv) == pytest.approx(4.8, abs=0.05)


def test_profile_gains():
    assert round(1.0 / 0.67, 2) == 1.49  # API server moved out: 33% of the serial time gone
    assert round(1.0 / 0.38, 2) == 2.63  # everything but the GPU overlapped


def test_batch_one_busy_fraction_with_2ms_cpu():
    gpu = 4.833e-3
    assert round(gpu / (gpu + 2e-3), 2) == 0.71
