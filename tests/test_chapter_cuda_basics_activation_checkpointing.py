"""cuda_basics-activation-checkpointing: GPT-3 175B's activation bytes (Korthikanti et al. §4) and the FLOPs."""

import mha_kit as mk

L, S, B, H, A = 96, 2048, 1, 12288, 96  # GPT-3 175B (Brown et al. Table 2.1), one sequence


def test_activation_bytes_by_mode():
    per_layer = S * B * H * 34 + 5 * A * S * S * B
    assert L * mk.activation_bytes_per_layer(S, B, H, A) == L * per_layer
    assert round(L * per_layer / 1e9, 1) == 275.4
    assert round(L * 34 * S * B * H / 1e9, 1) == 82.1
    assert round((L * 2 * S * B * H + per_layer) / 1e9, 1) == 7.7


def test_recompute_flops():
    assert round(2 / 6, 2) == 0.33  # one more forward (2N) on 6N
    scores = 4 * B * S * S * H
    share = scores / (3 * (24 * B * S * H * H + scores))  # the book's own count, not a figure quoted from the paper
    assert round(100 * share, 1) == 0.9
