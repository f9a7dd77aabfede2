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


def _spread():
    """The chapter's offline workload: 32 lognormal answer lengths, seed 2."""
    rng = np.random.default_rng(2)
    return np.clip(rng.lognormal(np.log(60), 0.6, size=32), 8, 1024).astype(int)


def test_glued_gain_on_the_chapters_workload():
    outs, zero = _spread(), [0.0] * 32
    gain = _finish(outs, zero, "static") / _finish(outs, zero, "continuous")
    assert f"{gain:.1f}" == "1.5"


def test_slot_use_per_batch_and_pooled_written_out():
    outs = [int(x) for x in _spread()]
    total = 0
    longest = []
    per_batch = []
    for start in range(0, 32, 8):  # the four static batches of eight, in arrival order
        batch = outs[start:start + 8]
        total += sum(batch)
        longest.append(max(batch))
        per_batch.append(sum(batch) / (8 * max(batch)))
    assert (total, sum(longest), max(outs)) == (2199, 588, 206)
    assert f"{sum(per_batch) / 4:.2f}" == "0.51"  # glued cb_gain_util: mean of the four
    pooled = total / (8 * sum(longest))
    assert f"{pooled:.2f}" == "0.47" and f"{1 / pooled:.1f}" == "2.1"  # cb_gain_pooled, cb_gain_bound
    # the bound is the static decode steps over the floor sum/b (the floor exceeds the longest answer)
    assert total / 8 > max(outs) and abs(1 / pooled - sum(longest) / (total / 8)) < 1e-12


def test_refill_in_arrival_order_step_count():
    """Decode steps when each request takes the first free place, by a step-by-step walk."""
    queue = [int(x) for x in _spread()]
    left = [0] * 8  # tokens still to decode in each place
    steps = 0
    while queue or any(left):
        for i in range(8):
            if left[i] == 0 and queue:
                left[i] = queue.pop(0)
        left = [max(x - 1, 0) for x in left]
        steps += 1
    assert steps == 387 and f"{588 / steps:.2f}" == "1.52"


def test_skipped_requests_stay_skipped_when_the_order_is_fixed():
    budget, k, running = 2048, 4, 512
    skipped_each_step = []
    for _ in range(3):  # the list keeps its order and every request asks for 1 + k again
        left, skipped = budget, []
        for idx in range(running):
            take = min(1 + k, left)
            left -= take
            if take == 0:
                skipped.append(idx)
        skipped_each_step.append(skipped)
    assert skipped_each_step[0] == list(range(410, 512))
    assert skipped_each_step[0] == skipped_each_step[1] == skipped_each_step[2]
    assert running * (1 + 3) <= budget < running * (1 + 4)  # three drafts each fit, four do not
    assert 256 * (1 + k) == 1280 <= budget  # vLLM's default max_num_seqs there (256) fits


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
