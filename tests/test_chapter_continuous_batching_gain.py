"""Claims of book/continuous_batching.ipynb's sections on when continuous batching gains little and on
running requests that ask for more than the token budget (round 19, U19b-32 and U19b-37)."""

import numpy as np

import mha_kit as mk

STEP = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])


def _finish(outputs, arrivals, policy):
    reqs = [(float(a), 200, int(o)) for a, o in zip(arrivals, outputs)]
    lats = mk.simulate_batching(reqs, STEP, 2048, chunked_prefill=False, policy=policy, max_seqs=8)
    return mk.summarize_latencies(lats).last_finish


def test_equal_answers_give_static_and_continuous_the_same_finish():
    outs, zero = [64] * 32, [0.0] * 32
    assert _finish(outs, zero, "static") == _finish(outs, zero, "continuous")


def test_light_load_gives_the_same_finish():
    outs = [10, 300, 40, 90] * 2
    spaced = [2.0 * i for i in range(8)]  # each request alone: 2 s apart, none lasts 2 s
    assert _finish(outs, spaced, "static") == _finish(outs, spaced, "continuous")


def test_spread_answers_favour_continuous_batching():
    outs = [300, 10, 10, 10, 10, 10, 10, 10] * 4  # one long answer per static batch of 8
    zero = [0.0] * 32
    assert _finish(outs, zero, "static") > 1.5 * _finish(outs, zero, "continuous")


def test_slot_use_is_mean_over_max():
    lengths = np.array([[4, 2], [3, 3]])  # two static batches of two places
    util = lengths.sum(axis=1) / (2 * lengths.max(axis=1))
    assert util.tolist() == [(4 + 2) / (2 * 4), 1.0]


def test_budget_overflow_split_written_out():
    budget, k, running = 2048, 4, 512
    full = budget // (1 + k)  # 409 requests get their token and 4 drafts: 2,045 tokens
    left = budget - full * (1 + k)  # 3 tokens for the next one
    assert (full, left, running - full - 1) == (409, 3, 102)
    asks = np.full(running, 1 + k)
    before = np.concatenate(([0], np.cumsum(asks)[:-1]))
    given = np.minimum(asks, np.maximum(budget - before, 0))
    assert (given == asks).sum() == 409 and ((given > 0) & (given < asks)).sum() == 1 and (given == 0).sum() == 102
    assert given.sum() == budget
