"""Claims of attention_cost's sections on the FLOP split and the backward pass, with the products
written out (Llama 3 70B: d 8192, 64 heads, 8 KV heads, d_h 128, d_ff 28672)."""
import pytest

import mha_kit as mk


def split(n_ctx):
    d, h, h_kv, d_h, d_ff = 8192, 64, 8, 128, 28672
    proj = 2 * (2 * d * h * d_h + 2 * d * h_kv * d_h)
    attn = 4 * n_ctx * h * d_h
    ffn = 2 * 3 * d * d_ff
    total = proj + attn + ffn
    return proj / total, attn / total, ffn / total


def test_projection_macs_match_the_written_product():
    assert mk.projection_macs(mk.get_preset("llama-3-70b"), 1) == 2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128


@pytest.mark.parametrize("n_ctx, shares", [(2_048, (17, 4, 79)), (8_192, (15, 14, 71)), (131_072, (5, 72, 23))])
def test_flop_shares(n_ctx, shares):
    assert tuple(round(100 * s) for s in split(n_ctx)) == shares


def test_feed_forward_dominates_at_chat_lengths_attention_past_tens_of_thousands():
    assert split(8_192)[2] > 0.5 and split(131_072)[1] > 0.5


def test_logsumexp_is_n_over_2_times_smaller_than_p():
    n, h = 8192, 32
    assert (h * n * n * 2) // (h * n * 4) == n // 2 == 4096


def test_score_matrix_at_8k_32k_and_128k():
    cfg = mk.MODEL_FACTS["llama-3-70b"].config
    for n, total_gib, head_mib in ((8192, 8, 128), (32768, 128, 2048), (131072, 2048, 32768)):
        assert 64 * n * n * 2 == total_gib * 2**30 == mk.score_matrix_bytes(cfg, n)  # h * n^2 * 2 bytes
        assert n * n * 2 == head_mib * 2**20  # one head
    assert 64 * 32768**2 * 2 > 80e9  # one layer's scores at 32K exceed an H100's 80 GB


def test_prefill_decode_whole_layer_with_the_feed_forward_block():
    """attention_cost-prefill-decode: one full Llama 3 70B layer on an H100 SXM (bf16), products written out."""
    d, h, h_kv, d_h, d_ff = 8192, 64, 8, 128, 28672
    attn_w = 2 * d * h * d_h + 2 * d * h_kv * d_h  # W_Q, W_O and W_K, W_V
    ffn_w = 3 * d * d_ff  # gate, up, down
    bw, peak = 3.35e12, 989e12
    decode_bytes = 2 * (attn_w + ffn_w + 2 * d + 8192 * 2 * h_kv * d_h)  # weights, in/out, cache of 8,192 tokens
    assert f"{decode_bytes / bw * 1e6:.0f}" == "521"
    n = 8192
    prefill_flops = 2 * (n * attn_w + 2 * n * n * h * d_h) + 2 * n * ffn_w  # no causal saving
    assert f"{prefill_flops / peak * 1e3:.1f}" == "16.4"
    assert round(100 * ffn_w / (ffn_w + attn_w)) == 82
    # the verdict stands: prefill right of the ridge (295), decode far left of it
    assert prefill_flops / (2 * (attn_w + ffn_w + 2 * n * d + n * 2 * h_kv * d_h)) > peak / bw
    assert 2 * (attn_w + ffn_w) / decode_bytes < 2


def test_toy_stack_with_and_without_a_cache():
    """attention_cost-no-cache: 2 layers, d = 512 (8 heads of 64), 100-token prompt, 100 new tokens."""
    layers, d, prompt, new = 2, 512, 100, 100
    assert 100 * 512 * 512 == 26_214_400 and 2 * 100 * 512 * 512 == 52_428_800  # (m, k) @ (k, n): m n k FMAs

    def one_pass(n):  # 4 d^2 projection weights per token, 2 d multiply-adds per visible key (scores + mix)
        return 2 * layers * (4 * d * d * n + 2 * d * n * (n + 1) // 2)

    no_cache = sum(one_pass(prompt + t) for t in range(new))
    cached = one_pass(prompt) + sum(2 * layers * (4 * d * d + 2 * d * (prompt + t)) for t in range(1, new))
    assert cached == one_pass(prompt + new - 1)
    assert f"{no_cache / 1e9:,.2f}" == "67.48" and f"{cached / 1e9:,.3f}" == "0.916"
    assert round(no_cache / cached) == 74


def test_causal_prefill_attention_crosses_the_ridge_at_about_four_times_it():
    # causal: 2 h S^2 d_h FLOPs (half of 4 h S^2 d_h) over 2 (2 S h d_h + 2 S h d_h) bf16 bytes -> S / 4
    ridge = 989e12 / 3.35e12  # H100 SXM, bf16 dense FLOP/s over HBM bytes/s
    h, d_h = 64, 128
    first = next(s for s in range(1, 5000) if (2 * h * s * s * d_h) / (2 * 4 * s * h * d_h) > ridge)
    assert first == 1_181
    assert mk.attention_only_intensity(1_181, 1_181, 64, 64) == 1_181 / 2  # unmasked: S / 2


def test_mla_decode_intensity_near_and_past_the_h100_ridge():
    ridge = 989e12 / 3.35e12
    flops = 2 * 128 * (512 + 64 + 512)  # 128 heads, d_k = 576, d_v = 512, per cached token
    v3 = mk.PRESETS["deepseek-v3"]
    assert round(flops / (2 * 576)) == round(mk.mla_decode_intensity(v3)) == 242 < ridge
    assert round(2 * flops / (2 * 576)) == round(mk.mla_decode_intensity(v3, query_tokens=2)) == 484 > ridge
    fp8 = 512 * 1 + 4 * 4 + 64 * 2  # FlashMLA's FP8 entry: 656 bytes
    assert round(flops / fp8) == round(mk.mla_decode_intensity(v3, latent_bytes_per_token=fp8)) == 425 > ridge
