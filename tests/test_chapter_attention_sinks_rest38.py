"""The gated-attention section of book/attention_sinks.ipynb, recomputed independently."""
import math


def test_sink_scores_table():
    # a = ln(s) + ln(p / (1 - p)) against keys scoring 0
    assert round(math.log(1024) + math.log(9), 1) == 9.1
    assert round(math.log(1024) + math.log(99), 1) == 11.5
    assert round(math.log(1_048_576) + math.log(99), 1) == 18.5
    assert round(math.log(0.01 / 0.99), 1) == -4.6  # the gate's logit, at any length


def test_gate_widens_q_proj_by_the_query_width():
    # Qwen3-Next-80B-A3B: hidden 2048, 16 heads of 256 (config.json): q_proj 2048 -> 2 * 16 * 256
    d, h, d_h = 2048, 16, 256
    assert 2 * h * d_h * d - h * d_h * d == h * d_h * d == 8_388_608
