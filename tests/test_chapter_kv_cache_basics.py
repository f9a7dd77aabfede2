"""The numbers the chapter "The KV cache from zero" states, recomputed with the products written out."""
import pytest

import mha_kit as mk

L8 = mk.MODEL_FACTS["llama-3-8b"]
LAYERS, D, H, H_KV, D_H, D_FF, VOCAB = 32, 4096, 32, 8, 128, 14336, 128256  # Llama 3 8B (Meta's config)
PARAMS_ATTN = D * H * D_H + 2 * D * H_KV * D_H + H * D_H * D
LINEAR = 2 * LAYERS * (PARAMS_ATTN + 3 * D * D_FF)  # FLOPs per position
PER_KEY = 4 * LAYERS * H * D_H  # FLOPs per query-key pair
LOGITS = 2 * VOCAB * D
KV_PER_TOKEN = LAYERS * 2 * H_KV * D_H * 2  # bytes, bf16


def test_record_matches_the_shape_used_here():
    cfg = L8.config
    assert (cfg.num_layers, cfg.d_model, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim) == (LAYERS, D, H, H_KV, D_H)
    assert (L8.intermediate_size, L8.vocab_size) == (D_FF, VOCAB)


def test_flops_with_and_without_a_cache_at_1k_plus_1k():
    p, t = 1024, 1024
    cached = sum(LINEAR + PER_KEY * i for i in range(1, p + t)) + t * LOGITS  # every position once
    rerun = sum(LINEAR * n + PER_KEY * n * (n + 1) // 2 for n in range(p, p + t)) + t * LOGITS
    assert f"{cached / 1e12:,.1f}" == "30.7"  # TFLOP, as printed
    assert f"{rerun / 1e15:,.1f}" == "22.6"  # PFLOP
    assert round(rerun / cached) == 735
    assert cached == mk.generation_flops(L8, p, t) and rerun == mk.generation_flops(L8, p, t, cached=False)


def test_bytes_over_a_generation():
    p, t = 1024, 1024
    # bf16 weights a pass streams: all but the 128,256 x 4,096 input embedding table (looked up by row)
    weights = 2 * (mk.dense_decoder_params(L8) - 128_256 * 4_096)
    cache_read = sum((p + k - 1) * KV_PER_TOKEN for k in range(1, t))
    assert f"{t * weights / 1e12:.1f}" == "15.4"  # TB of weights over 1,024 passes
    assert f"{cache_read / 1e9:.1f}" == "205.8"  # GB of cache read
    assert f"{(p + t - 1) * KV_PER_TOKEN / 1e6:.1f}" == "268.3"  # MB written
    assert round(t * weights / cache_read) == 75


def test_one_output_token_saves_nothing():
    assert mk.generation_flops(L8, 1000, 1, cached=False) == mk.generation_flops(L8, 1000, 1)


def test_sequences_that_fit_and_the_preallocated_pool():
    free = int(0.9 * 80e9) - 2 * mk.dense_decoder_params(L8)
    assert free // (2048 * KV_PER_TOKEN) == 208 and free // (8192 * KV_PER_TOKEN) == 52
    assert free // KV_PER_TOKEN == 426_784


def test_four_samples_share_the_prompt():
    prompt, answer, block = 1000, 200, 16
    unshared = 4 * -(-(prompt + answer) // block)
    shared = prompt // block + 4 * -(-(prompt % block + answer) // block)  # partial block copied by each
    assert (unshared, shared) == (300, 114)
    assert unshared * block * KV_PER_TOKEN == 600 * 2**20 and shared * block * KV_PER_TOKEN == 228 * 2**20


def test_interrupted_stream_reuses_whole_blocks():
    assert (1000 + 300) // 16 * 16 == 1296


@pytest.mark.parametrize("length", [1024, 2048, 4096])
def test_the_saving_doubles_with_the_length(length):
    ratio = mk.generation_flops(L8, length, length, cached=False) / mk.generation_flops(L8, length, length)
    assert round(ratio) == {1024: 735, 2048: 1461, 4096: 2887}[length]


def test_capacity_knobs_blocks_and_dtype():
    free = int(0.9 * 80e9) - 2 * mk.dense_decoder_params(L8)
    assert free // (16 * KV_PER_TOKEN) == 26_674  # blocks of 16 tokens, bf16
    assert free // (16 * KV_PER_TOKEN // 2) == 53_348  # fp8: one byte a number
    assert free // (8192 * KV_PER_TOKEN // 2) == 104 and free // (2048 * KV_PER_TOKEN // 2) == 416
    assert mk.kv_cache_bytes_per_token(L8.config, "fp8") * 2 == KV_PER_TOKEN


def test_training_state_against_serving_weights_llama3_8b():
    """kv_cache_basics, training against inference: 16 bytes a parameter (ZeRO §3.1) against 2 (bf16)."""
    d, layers, d_ff, vocab, h_kv, d_h = 4096, 32, 14336, 128256, 8, 128
    per_layer = 2 * d * d + 2 * d * h_kv * d_h + 3 * d * d_ff + 2 * d  # W_Q, W_O; W_K, W_V; FFN; two norms
    params = 2 * vocab * d + layers * per_layer + d  # untied embedding and head, final norm
    assert params == 8_030_261_248
    assert round(16 * params / 1e9) == 128 and round(2 * params / 1e9) == 16
    assert 16 * params > 80e9  # more than one 80 GB GPU


def test_static_batch_useful_share():
    import numpy as np

    lens = np.random.default_rng(4).integers(20, 500, size=8)
    assert lens.tolist() == [368, 472, 443, 265, 471, 488, 485, 58]
    assert f"{(368 + 472 + 443 + 265 + 471 + 488 + 485 + 58) / (8 * 488):.0%}" == "78%"


def test_vllm_max_concurrency_7_34_for_16k_requests():
    # vLLM: max_concurrency = num_blocks / cdiv(max_model_len, block_size), printed with two decimals
    block, max_len = 16, 16_384
    per_request = (max_len + block - 1) // block
    assert per_request == 1024
    assert per_request * block * KV_PER_TOKEN == 2 * 2**30  # 2 GiB a full-length request
    fits = [n for n in range(7000, 8000) if f"{n / per_request:.2f}" == "7.34"]
    assert (fits[0], fits[-1]) == (7512, 7521)
    pool = 7516 * block * KV_PER_TOKEN
    assert 7516 * block == 120_256
    assert f"{pool / 2**30:.2f}" == "14.68" and f"{pool / 1e9:.2f}" == "15.76"


def test_llama3_8b_weights_in_gb_and_gib():
    params = 8_030_261_248  # embeddings + 32 layers + norm + untied head (Meta's config)
    weights = 2 * params
    assert f"{weights / 1e9:.2f}" == "16.06" and f"{weights / 2**30:.2f}" == "14.96"
    assert f"{(weights + 7516 * 16 * KV_PER_TOKEN) / 2**30:.1f}" == "29.6"


def test_an_edit_keeps_the_full_blocks_before_the_change():
    block = 16
    assert (500 // block) * block == 496  # edit at token 500
    assert (1000 // block) * block == 992  # regenerate: every full block of a 1,000-token prompt
    rng_tokens = list(range(1000))
    apc = mk.PrefixBlockCache(block_size=block, capacity_blocks=1000)
    apc.insert(rng_tokens)
    assert apc.match(rng_tokens[:500] + [5000] + rng_tokens[501:]) == 496


def test_engine_fractions_sglang_reading():
    # kv_cache_basics-engine-fractions: H100 taken as 80 GB, Llama 3 8B bf16, 4 GB assumed runtime
    total, weights, act = 80 * 10**9, 2 * 8_030_261_248, 4 * 10**9
    # SGLang: pool = f * base - weights (profile_max_num_token), activations outside the fraction
    assert round((0.9 * total - weights) / 1e9, 1) == 55.9
    assert round((0.5 * total - weights) / 1e9, 1) == 23.9
    assert round((0.9 * total - weights - act) / 1e9, 1) == 51.9  # vLLM, activations inside
    # at 0.9 SGLang's process holds weights + pool + runtime = 0.9 * total + runtime
    assert round((weights + (0.9 * total - weights) + act) / 1e9, 1) == 76.0
    # vLLM's 0.9 leaves SGLang 8 GB; SGLang's heuristic (server_args.py, _handle_gpu_memory_settings)
    # on an 80 GB-class card, tp = pp = 1: chunked prefill 8192, largest graph batch 256, in MiB
    mib = total / 2**20
    reserve = 512 + 8192 * 3 // 2 + 256 * 2 + 1024 // 8  # metadata + prefill + graphs + tp * pp
    assert reserve == 13_440 and reserve > 10 * 1024  # above the 10 GiB floor
    assert round((1 - 0.9) * total / 1e9, 1) == 8.0 < reserve * 2**20 / 1e9
    assert round((mib - reserve) / mib, 3) == 0.824  # on the data sheet's 80 GB
    # a second server at 0.5 after a first at 0.5: SGLang's base is what the first left (44 GB held)
    first_sglang = 0.5 * total + act
    assert round((0.5 * (total - first_sglang) - weights) / 1e9, 1) == 1.9
    # TensorRT-LLM: the first holds weights + act + 0.5 * (total - weights - act) = 50 GB; the second
    # counts it in its peak
    first_trt = weights + act + 0.5 * (total - weights - act)
    assert round(first_trt / 1e9, 1) == 50.0
    assert round(0.5 * (total - first_trt - weights - act) / 1e9, 1) == 5.0
