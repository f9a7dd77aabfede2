"""The differential-attention section of book/attention_sinks.ipynb, recomputed independently."""
import math

import numpy as np


def test_lambda_init_schedule():
    # lambda_init_fn(depth) = 0.8 - 0.6 * exp(-0.3 * depth) (Diff-Transformer/multihead_diffattn.py)
    values = [round(0.8 - 0.6 * math.exp(-0.3 * layer), 2) for layer in (0, 1, 2, 5, 10, 31)]
    assert values == [0.2, 0.36, 0.47, 0.67, 0.77, 0.8]


def test_cache_matches_the_baseline():
    # baseline 4096 wide, 32 heads of 128; differential 16 heads, halves of 128, value 256
    baseline = 2 * 32 * 128
    differential = 16 * 2 * 128 + 16 * 256
    assert baseline == differential == 8192
    assert baseline * 2 == 16 * 1024  # bf16 bytes: 16 KiB


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_toy_cancellation_is_best_at_the_matched_lambda():
    rng = np.random.default_rng(5)
    common = rng.normal(size=64)
    s1 = common.copy()
    s1[40] += 3.0
    s2 = common + rng.normal(scale=0.1, size=64)
    a1, a2 = _softmax(s1), _softmax(s2)

    def share(lam):
        w = a1 - lam * a2
        return abs(w[40]) / np.abs(w).sum()

    matched = 1.0 - a1[40]
    assert round(a1[40], 2) == 0.44 and round(matched, 2) == 0.56
    assert share(0.0) < share(0.5) < share(matched)
    assert share(0.8) < share(matched)
    assert round(share(matched), 2) == 0.91
    assert np.isclose((a1 - 0.8 * a2).sum(), 0.2)  # rows sum to 1 - lambda
