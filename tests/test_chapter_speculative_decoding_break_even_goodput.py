"""Claims of speculative_decoding's EAGLE-3, self-speculation, lookahead and scheduler sections,
recomputed with products written out (no mha_kit speculative helpers, no notebook outputs)."""
import numpy as np

import mha_kit as mk

H100_BW, H100_FLOPS = mk.GPUS["h100-sxm"].hbm_bandwidth, mk.GPUS["h100-sxm"].bf16_flops
STEP = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])


def _seconds(batch, queries, context):
    nbytes = STEP.weight_bytes + STEP.kv_bytes_per_token * batch * (context + queries)
    flops = batch * queries * (STEP.flops_per_token + STEP.flops_per_cached_token * context)
    return max(nbytes / H100_BW, flops / H100_FLOPS)


def _tokens(alpha, k):
    return sum(alpha ** i for i in range(k + 1))


def _speedup(batch, k, context, alpha=0.8, c=0.05):
    t1 = _seconds(batch, 1, context)
    return _tokens(alpha, k) * t1 / (k * c * t1 + _seconds(batch, k + 1, context))


def test_roofline_helper_is_the_chapters():
    assert np.isclose(_seconds(8, 5, 256), mk.roofline.roofline_seconds(
        STEP.weight_bytes + STEP.kv_bytes_per_token * 8 * 261,
        8 * 5 * (STEP.flops_per_token + STEP.flops_per_cached_token * 256), H100_BW, H100_FLOPS))


def test_break_even_batches():
    """k = 1, 2, 4, 8 stop paying at B = 644, 501, 339, 192 with 256-token contexts."""
    for k, expected in ((1, 644), (2, 501), (4, 339), (8, 192)):
        assert _speedup(expected, k, 256) < 1 <= _speedup(expected - 1, k, 256)


def test_long_context_never_breaks_even_below_1024():
    assert all(_speedup(b, k, 1024) >= 1 for k in (1, 2, 4, 8) for b in (1, 256, 512, 1024))


def test_goodput_k_by_batch():
    """k = 8 at B = 1, 4 at 64, 2 at 128, 1 at 256 and 512, 0 at 1,024."""
    for batch, expected in ((1, 8), (64, 4), (128, 2), (256, 1), (512, 1), (1024, 0)):
        scores = [_speedup(batch, k, 256) for k in range(9)]
        assert int(np.argmax(scores)) == expected


def test_eagle3_illustration():
    falling = [0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
    per_position = np.cumprod(falling)
    assert f"{1 + per_position.sum():.2f}" == "2.95"
    assert f"{_tokens(0.8, 6):.2f}" == "3.95"


def test_self_speculative_table_entries():
    # exit 8 of 32, alpha 0.7, k = 4: 2.7731 tokens over 4 * 0.25 + 1 = 2 steps
    assert f"{_tokens(0.7, 4) / (4 * 8 / 32 + 1):.2f}" == "1.39"
    assert f"{_tokens(0.8, 4) / (4 * 8 / 32 + 1):.2f}" == "1.68"
    assert f"{_tokens(0.6, 4) / (4 * 0.3 + 1):.2f}" == "1.05"
    assert f"{_tokens(0.5, 4) / (4 * 16 / 32 + 1):.2f}" == "0.65"
    assert f"{_tokens(0.7, 4) / (4 * 0.05 + 1):.2f}" == "2.31"


def test_lookahead_step_cost():
    extra = (7 + 7) * (5 - 1)
    assert extra == 56
    assert f"{_seconds(1, 57, 256) / _seconds(1, 1, 256):.2f}" == "1.00"
    assert f"{_seconds(64, 57, 256) / _seconds(64, 1, 256):.1f}" == "10.3"


def test_kv_reservation():
    # 2k + 1 = 9 slots per request at k = 4, 512 requests of 128 KiB per token
    assert STEP.kv_bytes_per_token == 2 * 8 * 128 * 32 * 2
    assert 512 * 9 * STEP.kv_bytes_per_token / 2**20 == 576
