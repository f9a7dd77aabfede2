"""The judge's messages for the typical mistakes of assignments 07-10 (no notebook, no kernel)."""
import numpy as np
import pytest

import mha_kit as mk
from mha_course.judge.core import first_failure
from mha_course.wire import encode


def _reason(question, case, value):
    failure = first_failure(question, [case], [encode(value)])
    assert failure is not None, "a wrong answer passed"
    return failure[2]


def _window(n, w, wide=0):
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return (j <= i) & (j > i - w - wide)


def _unshifted_state(n, b, d_v, seed, scale):
    rng = np.random.default_rng(seed)
    scores, v = scale * rng.standard_normal((n, b)), rng.standard_normal((b, d_v))
    return scores.max(axis=1), np.exp(scores).sum(axis=1), np.exp(scores) @ v


@pytest.mark.parametrize("question, case, value, words", [
    # 07: exp without the row maximum, small scores (named) and huge ones (overflow)
    ("block_state", (4, 3, 2, 0, 1.0), _unshifted_state(4, 3, 2, 0, 1.0), "before the row maximum was subtracted"),
    ("score_bytes_saved", ("llama-3-8b", 8192, 16), 8192 * 8192 * 2, "that is one head"),
    ("score_bytes_saved", ({"d_model": 6, "num_heads": 3, "num_layers": 1}, 7, 3), 441 // 8, "rounded down"),
    ("score_bytes_saved", ("llama-3-8b", 8192, 16), 32 * 8192 * 8192 * 2.0, "as an int, got float"),
    # 08: the rotation backwards; the plain dot product
    ("rope", (3, 4, 0, [0, 1, 2]), mk.rope(np.random.default_rng(0).standard_normal((3, 4)), [0, -1, -2]),
     "the wrong way"),
    ("rope_score", (8, 0, 5, 2), float(np.prod(np.random.default_rng(0).standard_normal((2, 8)), axis=0).sum()),
     "not rotated"),
    # 09: a window one key too wide, a plain causal mask at the top left, an int mask
    ("sliding_window_mask", (6, 3), _window(6, 3, wide=1), "one position off"),
    ("chunk_mask", (3, 4), np.tril(np.ones((3, 7), dtype=bool)), "bottom-right"),
    ("sliding_window_mask", (6, 3), _window(6, 3).astype(int), "as a numpy array of bool"),
    # 10: blocks rounded down or as floats, tokens instead of slots, a full cache, scales left out
    ("blocks_per_request", ([100, 16, 1], 16), [6, 1, 0], "rounded down"),
    ("blocks_per_request", ([100, 16, 1], 16), [7.0, 1.0, 1.0], "plain ints"),
    ("paged_bytes_saved", ([100, 16, 1000], 2048, 16, 131072), (3 * 2048 - 1116) * 131072, "whole blocks"),
    ("rolling_cache_bytes", ("mistral-7b", 16384, 4096, 16), 16384 * 32 * 2 * 8 * 128 * 2, "last window tokens"),
    ("rolling_cache_bytes", ("mistral-7b", 1000, 4096, 16), 4096 * 32 * 2 * 8 * 128 * 2, "only t tokens"),
    ("int8_cache_bytes", ("llama-3-8b", 8192, 32), 32 * 2 * 8 * 128 * 8192, "the scales are stored too"),
])
def test_a_typical_mistake_gets_its_reason(question, case, value, words):
    assert words in _reason(question, case, value)


def test_scores_in_the_hundreds_without_the_shift_overflow():
    with np.errstate(over="ignore", invalid="ignore"):
        state = _unshifted_state(3, 6, 4, 3, 300.0)
    assert "overflow" in _reason("block_state", (3, 6, 4, 3, 300.0), state)


def test_a_merge_that_does_not_rescale_is_named():
    rng = np.random.default_rng(0)
    a, b = [(3 * rng.standard_normal(3), rng.uniform(1.0, 8.0, 3), rng.standard_normal((3, 2))) for _ in range(2)]
    summed = (np.maximum(a[0], b[0]), a[1] + b[1], a[2] + b[2])
    assert "rescale each state" in _reason("merge_states", (3, 2, 0, False), summed)
