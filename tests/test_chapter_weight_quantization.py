"""The claims of book/weight_quantization.ipynb, recomputed with the products written out."""
import numpy as np
import pytest

import mha_kit as mk

# Llama 3 70B (config.json): d = 8192, 80 layers, 64 query heads and 8 KV heads of 128, d_ff = 28672, V = 128256
D, LAYERS, KV, D_FF, VOCAB = 8192, 80, 8 * 128, 28672, 128256
LAYER = D * D * 2 + D * KV * 2 + 3 * D * D_FF + 2 * D  # q and o, k and v, SwiGLU, two RMSNorms
P70 = LAYERS * LAYER + 2 * VOCAB * D + D  # embeddings, untied head, final norm
BW, BF16, FP8 = 3.35e12, 989e12, 1979e12  # H100 SXM datasheet
INT4 = 4 + (16 + 16) / 128  # an fp16 scale and zero per 128 weights


def test_parameter_count_is_the_record():
    assert P70 == 70_553_706_496 == mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"])


def test_decode_floor_falls_with_the_bits_and_prefill_does_not():
    assert INT4 == 4.25 == mk.bits_per_weight(4, 128, 16, 16)
    decode16, decode4 = P70 * 2 / BW, P70 * INT4 / 8 / BW
    assert decode16 == pytest.approx(0.0421, abs=1e-4) and decode4 == pytest.approx(0.0112, abs=1e-4)
    prefill = 2 * P70 * 4096 / BF16
    assert prefill == pytest.approx(0.584, abs=1e-3)
    assert prefill > P70 * 2 / BW  # compute-bound at bf16 already, so fewer weight bytes change nothing
    assert mk.weight_step_seconds(P70, 4096, INT4, BW, BF16) == mk.weight_step_seconds(P70, 4096, 16, BW, BF16)


def test_crossover_tokens_and_speed_up_by_batch():
    assert 16 / 16 * BF16 / BW == pytest.approx(295.2, abs=0.1)  # n* = b F / (16 beta)
    assert INT4 / 16 * BF16 / BW == pytest.approx(78.4, abs=0.1)
    at = {b: max(P70 * 2 / BW, 2 * P70 * b / BF16) / max(P70 * INT4 / 8 / BW, 2 * P70 * b / BF16) for b in (1, 256, 512)}
    assert at[1] == pytest.approx(16 / 4.25) and at[256] == pytest.approx(1.15, abs=0.01) and at[512] == 1.0


def test_sequences_that_fit_on_two_h100s():
    kv_seq = 2 * LAYERS * KV * 2 * 4096  # keys and values, bf16, 4,096 tokens
    assert kv_seq == mk.kv_cache_bytes_per_token(mk.PRESETS["llama-3-70b"]) * 4096
    assert int((160e9 - P70 * 2) // kv_seq) == 14
    assert int((160e9 - P70 * INT4 / 8) // kv_seq) == 91


def test_w8a8_halves_prefill_and_wins_at_batch_256():
    assert 2 * P70 * 4096 / FP8 == pytest.approx(0.292, abs=1e-3)
    w4_256 = max(P70 * INT4 / 8 / BW, 2 * P70 * 256 / BF16)
    w8_256 = max(P70 * 1 / BW, 2 * P70 * 256 / FP8)
    assert w8_256 < w4_256 and w4_256 == pytest.approx(0.0365, abs=1e-4)


def test_block_format_bits_and_gpt_oss_size():
    assert 4 + 8 / 32 == 4.25 and 4 + 8 / 16 == 4.5  # MXFP4, NVFP4 (OCP MX Table 1; NVIDIA)
    assert mk.bits_per_weight(8, 128 * 128, 32) == pytest.approx(8.002, abs=1e-3)
    gb = (114.71e9 * 4.25 / 8 + (116.83e9 - 114.71e9) * 2) / 1e9  # gpt-oss-120b model card, Table 1
    assert gb == pytest.approx(65.2, abs=0.1) and gb < 80


def test_smoothquant_and_awq_help_on_outlier_channels():
    rng = np.random.default_rng(11)
    x, w = rng.normal(size=(256, 256)), rng.normal(0, 0.05, size=(128, 256))
    x[:, 3] *= 100
    y = x @ w.T

    def w8a8(alpha):
        s = mk.smoothquant_scales(np.abs(x).max(0), np.abs(w).max(0), alpha)
        return np.linalg.norm(mk.fake_quantize(x / s, 8, "tensor") @ mk.fake_quantize(w * s, 8, None).T - y)

    assert w8a8(0.5) < w8a8(0.0) / 3
    alpha, _, errors = mk.awq_search(w, x, 4, 128)
    assert alpha > 0 and errors.min() < errors[0]


def test_bytes_per_weight_and_decode_floor_at_three_precisions():
    assert [b / 8 for b in (16, 8, INT4)] == [2.0, 1.0, 0.53125]
    assert [round(P70 * b / 8 / 1e9, 1) for b in (16, 8, INT4)] == [141.1, 70.6, 37.5]
    assert [round(1e3 * P70 * b / 8 / BW, 1) for b in (16, 8, INT4)] == [42.1, 21.1, 11.2]


def test_rounding_errors_are_unbiased_and_cancel_in_dot_products():
    rng = np.random.default_rng(0)
    w = rng.standard_t(4, size=(256, 1024))
    err = mk.fake_quantize(w, 4, 128) - w
    assert abs(err.mean()) < 0.01 * np.sqrt(np.mean(err ** 2))
    x = rng.normal(0, 1, size=(1024, 32))
    # random-walk growth: about sqrt(1024) = 32 times below the all-same-sign sum, within a factor of 2
    ratio = np.mean(np.abs(err) @ np.abs(x)) / np.sqrt(np.mean((err @ x) ** 2))
    assert 16 < ratio < 64


def test_paper_perplexity_changes():
    # GPTQ Table 3 (OPT-175B 8.34 -> 8.37 at 4 bits, 8.68 at 3), AWQ Table 4 (Llama-2-70B 3.32 -> 3.41)
    assert f"{(8.37 - 8.34) / 8.34:.1%}" == "0.4%" and f"{(8.68 - 8.34) / 8.34:.1%}" == "4.1%"
    assert f"{(3.41 - 3.32) / 3.32:.1%}" == "2.7%"


def test_sentence_transformers_demo_index_sizes():
    # 41 million 1,024-dim embeddings: one sign bit per dimension, or four bytes in float32
    n, dim = 41_000_000, 1024
    assert n * dim // 8 == 5_248_000_000 == mk.embedding_index_bytes(n, dim, "binary")  # the README's 5.2 GB
    assert n * dim * 4 == 167_936_000_000 == mk.embedding_index_bytes(n, dim, "float32")  # 168 GB
    assert n * dim == mk.embedding_index_bytes(n, dim, "int8")


def test_teacher_distribution_bytes_for_logit_distillation():
    # Qwen3's vocabulary, 151,936 entries (Qwen3-30B-A3B config.json), one bf16 number each
    per_token = 151_936 * 2
    assert per_token == 303_872  # just under 297 KiB per position
    assert round(per_token * 10**9 / 1e12) == 304  # TB for 1B training tokens
