"""Claims of attention_cost's "Longer sequences: encoder-only against decoder-only" section, recomputed.

One attention layer of Llama 3 70B (d = 8192, 64 query heads, 8 KV heads, d_h = 128), bf16, batch 1,
with the counts written out by hand: the four projections, the score and value-mixing multiply-adds,
and the bytes (weights once, input and output activations, the K and V of the context).
"""

import mha_kit as mk

D, H, H_KV, D_H, BYTES = 8192, 64, 8, 128, 2
PROJ_MACS = D * H * D_H + 2 * D * H_KV * D_H + H * D_H * D  # Q, K and V, O: per token
WEIGHT_BYTES = PROJ_MACS * BYTES


def flops(tokens, context):
    return 2 * (tokens * PROJ_MACS + 2 * H * tokens * context * D_H)


def moved(tokens, context):
    return WEIGHT_BYTES + 2 * tokens * D * BYTES + 2 * context * H_KV * D_H * BYTES


def test_counts_match_mha_kit():
    cfg = mk.MODEL_FACTS["llama-3-70b"].config
    for tokens, context in ((1, 1), (1, 4096), (4096, 4096)):
        assert mk.layer_flops(cfg, tokens, context) == flops(tokens, context)
        assert mk.layer_bytes(cfg, tokens, context) == moved(tokens, context)


def test_encoder_compute_bound_decoder_memory_bound():
    previous = 0.0
    for n in (1024, 4096, 16384):
        enc_f, enc_b = flops(n, n), moved(n, n)
        dec_f = sum(flops(1, t) for t in range(1, n + 1))  # n serial steps, written as a loop
        dec_b = sum(moved(1, t) for t in range(1, n + 1))
        assert dec_f < enc_f  # each generated token sees only the tokens before it
        assert dec_b > 300 * enc_b  # the weights and a growing cache re-read at every step
        assert dec_f / dec_b < 2 < 1000 < enc_f / enc_b  # "near one FLOP per byte" against compute-bound
        assert enc_f / enc_b > previous  # the encoder's intensity rises with n
        previous = enc_f / enc_b


def test_decode_step_intensity_tends_to_the_gqa_group():
    # per step: 4 H t D_H attention FLOPs against 4 t H_KV D_H cache bytes, so FLOP/B -> H / H_KV
    assert 1.0 < flops(1, 1024) / moved(1, 1024) < 1.2  # "about one FLOP per byte at short context"
    assert 5 < flops(1, 131072) / moved(1, 131072) < H // H_KV == 8  # rising towards the group size
    assert flops(1, 10**9) / moved(1, 10**9) > 7.99
