"""Round 14 (unseen14k) claims in attention_cost and cuda_basics, recomputed by hand from the shapes."""
import pytest

H100_BW, H100_BF16 = 3.35e12, 989e12  # bytes/s and dense bf16 FLOP/s (NVIDIA H100 SXM datasheet)


def _llama70b_attention_share(n_keys):
    d, d_attn, d_kv, d_ff = 8192, 64 * 128, 8 * 128, 28672  # Llama 3 70B config.json
    proj = 2 * (2 * d * d_attn + 2 * d * d_kv)
    attn = 4 * n_keys * d_attn
    ffn = 2 * 3 * d * d_ff
    return attn / (proj + attn + ffn)


def test_last_token_against_causal_prefill_mean():
    assert round(_llama70b_attention_share(131_072), 2) == 0.72
    assert round(_llama70b_attention_share((131_072 + 1) / 2), 2) == 0.56


@pytest.mark.parametrize("layers, d, head, attn, ffn", [(12, 768, 0.27, 0.13, 0.40), (48, 1600, 0.05, 0.09, 0.57)])
def test_gpt2_split_small_and_xl(layers, d, head, attn, ffn):
    n, vocab = 1024, 50257
    parts = {"proj": layers * 8 * d * d, "attn": layers * 4 * n * d, "ffn": layers * 16 * d * d, "head": 2 * d * vocab}
    total = sum(parts.values())
    assert (round(parts["head"] / total, 2), round(parts["attn"] / total, 2), round(parts["ffn"] / total, 2)) == (
        head, attn, ffn)


def test_adamw_bytes_and_share():
    n_params = 8_030_261_248  # Llama 3 8B
    moved = 28 * n_params
    assert round(moved / 1e9) == 225
    seconds = moved / H100_BW
    assert round(seconds * 1e3) == 67
    matmul = 6 * n_params * 2048 / H100_BF16
    assert round(seconds / (seconds + matmul), 2) == 0.40


def test_softmax_flop_and_roofline_shares():
    n, d = 1024, 64
    qk = n * n * d + n * n * (d - 1)
    pv = n * d * n + n * d * (n - 1)
    softmax = 4 * n * n + 2 * n * (n - 1)  # scale, subtract, exp, divide per score; max and sum per row
    assert round(softmax / (qk + pv + softmax), 3) == 0.023
    t = [max(qk / H100_BF16, (2 * n * d + n * n) * 2 / H100_BW), 2 * n * n * 2 / H100_BW,
         max(pv / H100_BF16, (n * n + 2 * n * d) * 2 / H100_BW)]
    assert round(t[1] / sum(t), 2) == 0.47
