"""The numbers the chapter "Overload, failures and rollouts" states, recomputed by hand (products written out)."""
import math

import pytest

import mha_kit as mk

GB = 1e9


def test_queueing_table():
    # M/M/1: rho / (1 - rho) service times; Kingman with c_a^2 = 4, c_s^2 = 1 scales it by 2.5.
    assert round(0.5 / 0.5) == 1 and round(0.8 / 0.2) == 4 and round(0.95 / 0.05) == 19
    assert mk.kingman_wait(0.95, 4.0, 1.0) == pytest.approx(19 * 2.5)


def test_spike_backlog():
    # 10 x 1,000 req/s against 2,000 req/s of capacity for 60 s.
    backlog = (10 * 1000 - 2000) * 60
    assert backlog == 480_000
    assert backlog / 2000 == 240 and backlog / (2000 - 1000) == 480


def test_llama70_cache_numbers():
    # Llama 3 70B: 80 layers, 8 KV heads of 128, keys and values, bf16 (2 bytes).
    per_token = 2 * 80 * 8 * 128 * 2
    assert per_token == mk.kv_cache_bytes_per_token(mk.MODEL_FACTS["llama-3-70b"].config)
    assert round(per_token * 64 * 4000 / GB) == 84  # lost with a replica
    assert round(per_token * 32_000 / GB, 1) == 10.5  # one waiting agent session
    assert round(per_token * 10**6 / GB) == 328  # one million tokens
    free = 8 * 80 * GB - 2 * mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"])
    assert int(free // (per_token * 10**6)) == 1 and int(free // (per_token * 10**6 // 2)) == 3


def test_availability_from_llama3_failures():
    per_gpu_per_hour = 419 / (16_384 * 54 * 24)
    mtbf_h = 1 / (8 * per_gpu_per_hour)
    assert round(mtbf_h / 24) == 264
    a = mtbf_h / (mtbf_h + 2)
    assert mk.replicas_for_availability(16, a, 0.999) == 17
    p16 = sum(math.comb(16, i) * a**i * (1 - a) ** (16 - i) for i in range(16, 17))
    assert p16 < 0.999  # 16 replicas for 16 of load are not enough


def test_capacity_against_bandwidth():
    # Llama 3 8B, 8-bit weights, bf16 cache of 32 layers x 8 KV heads x 128 x 2 x 2 bytes per token.
    w = mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"])  # bytes at 8 bits
    per_token = 2 * 32 * 8 * 128 * 2
    c8k = per_token * 8192
    b_a, b_b = int((16e9 - w) // c8k), int((32e9 - w) // c8k)
    assert (b_a, b_b) == (7, 22)
    tps_a, tps_b = b_a / ((w + b_a * c8k) / 2e12), b_b / ((w + b_b * c8k) / 1e12)
    assert round(tps_a) == 901 and round(tps_b) == 695
    assert (16e9 - w) // (per_token * 61_440) == 0 < (16e9 - w) // (per_token * 60_416)
    assert 16 * 32 * (2 - 1) / (2 * 32 - 1 * 16) == pytest.approx(10.67, abs=0.01)


def test_edge_ceilings():
    # Llama 3 8B at Q4_0 (18 bytes per 32 weights). A decode step streams every matrix but the
    # input embedding table (one row gathered per token): 32 layers + final norm + untied head.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    read = (32 * per_layer + 4096 + 128_256 * 4096) * 18 / 32
    file = read + 128_256 * 4096 * 18 / 32
    assert round(file / 1e9, 1) == 4.5 and round(read / 1e9, 1) == 4.2
    assert round(2 * 8 * 5.6e9 / read) == 21 and round(546e9 / read) == 129 and round(12 * 8 * 6.4e9 / read) == 146
    assert round(273e9 / read) == 65 and round(800e9 / read) == 190
    llama2_7b = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert llama2_7b == 6_738_415_616
    l2_read = (llama2_7b - 32000 * 4096) * 18 / 32
    assert round(l2_read / 1e9, 1) == 3.7
    assert round(800e9 / l2_read) == 215 and round(546e9 / l2_read) == 147


def test_canary_samples():
    assert 1000 * 0.05 * 10 * 60 == 30_000
    assert len(mk.vllm_capture_sizes(512)) == 3 + len(range(8, 256, 8)) + len(range(256, 513, 16))


def test_edge_power_prompt_that_fits_500_ms():
    # Llama-3-8B at 4.5 bits on AGX Orin at 204.8 GB/s: decode at most 204.8e9 / bytes tokens/s.
    params = 2 * 128256 * 4096 + 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 4096
    decode_s = params * 4.5 / 8 / 204.8e9
    assert round(1 / decode_s) == 45
    # prefill: 170 sparse INT8 TOPS / 2 (dense) / 2 (FP16) = 42.5 TFLOP/s, x 0.5 clock x 0.5 MFU
    rate = 170e12 / 4 * 0.5 * 0.5
    layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336

    def seconds(n, reply):  # layers per token, the head once, causal attention (32 layers, 32 heads of 128)
        flops = 2 * n * 32 * layer + 2 * 128256 * 4096 + 32 * 4 * 32 * 128 * n * (n + 1) // 2
        return flops / rate + reply * decode_s

    assert seconds(240, 8) <= 0.5 < seconds(256, 8)
    assert seconds(96, 16) <= 0.5 < seconds(112, 16)


def test_groq_measured_rate_against_the_sram_floor():
    # Llama 3 70B: 80 layers, d 8192, 8 KV heads of 128, d_ff 28672, vocabulary 128256, untied embeddings.
    d, kv, ff, layers, vocab = 8192, 8 * 128, 28672, 80, 128256
    params = 2 * vocab * d + layers * (2 * d * d + 2 * d * kv + 3 * d * ff + 2 * d) + d
    floor = params * 1 / 80e12  # fp8 weights, one byte each, read at 80 TB/s across the pipelined chips
    measured = 1 / 300  # s a token at 300 tokens/s
    assert f"{1e3 * floor:.2f}" == "0.88" and f"{1e3 * measured:.1f}" == "3.3"
    assert f"{measured / floor:.1f}" == "3.8"
