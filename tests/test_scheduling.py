"""Tests for mha_kit.scheduling: the batching simulation and the roofline step time."""
import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk


def affine_step(prefill_tokens, decode_seqs, cached_tokens):
    """A step costs 10 ms, 0.1 ms per prompt token, 0.05 ms per decoding sequence, 1 us per cached token."""
    return 0.010 + 1e-4 * prefill_tokens + 5e-5 * decode_seqs + 1e-6 * cached_tokens


def _per_request(steps, n):
    """Prompt tokens computed and decode steps taken by each request, counted from the step log."""
    prefilled, decoded = [0] * n, [0] * n
    for step in steps:
        for i, tokens in step.prefill:
            prefilled[i] += tokens
        for i in step.decode:
            decoded[i] += 1
    return prefilled, decoded


# ---------------------------------------------------------------------------------------------
# One request alone
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("arrival", [0.0, 2.5])
def test_lone_request_ttft_is_its_prefill_step(arrival):
    (latency,) = mk.simulate_batching([(arrival, 300, 4)], affine_step, token_budget=512)
    assert latency.ttft == pytest.approx(affine_step(300, 0, 0), rel=1e-12)


def test_lone_request_prefill_in_chunks_reads_the_earlier_chunks():
    (latency,) = mk.simulate_batching([(0.0, 300, 1)], affine_step, token_budget=128)
    chunks = affine_step(128, 0, 0) + affine_step(128, 0, 128) + affine_step(44, 0, 256)
    assert latency.ttft == pytest.approx(chunks, rel=1e-12)
    assert math.isnan(latency.tpot) and math.isnan(latency.max_itl)  # one token: no gap
    steps = mk.batching_steps([(0.0, 300, 1)], affine_step, token_budget=128)
    assert [s.prefill for s in steps] == [((0, 128),), ((0, 128),), ((0, 44),)]
    assert [s.cached_tokens for s in steps] == [0, 128, 256]


def test_lone_request_decodes_one_token_per_step_over_a_growing_cache():
    (latency,) = mk.simulate_batching([(1.0, 100, 5)], affine_step, token_budget=512)
    gaps = [affine_step(0, 1, 100 + j) for j in range(4)]  # the cache holds the prompt and earlier tokens
    assert latency.tpot == pytest.approx(sum(gaps) / 4, rel=1e-12)
    assert latency.max_itl == pytest.approx(max(gaps), rel=1e-12)
    assert latency.finish == pytest.approx(1.0 + affine_step(100, 0, 0) + sum(gaps), rel=1e-12)


# ---------------------------------------------------------------------------------------------
# A long prompt arriving among running decodes
# ---------------------------------------------------------------------------------------------

# Three short requests decoding 40 tokens each; a 3,000-token prompt arrives at 0.1 s.
SHORT = [(0.0, 50, 40), (0.0, 60, 40), (0.0, 70, 40)]
LONG = (0.1, 3000, 5)


def _cached_free(prefill_tokens, decode_seqs, cached_tokens):
    return affine_step(prefill_tokens, decode_seqs, 0)


def test_chunking_cuts_the_stall_of_running_requests():
    whole = mk.simulate_batching(SHORT + [LONG], _cached_free, token_budget=4096, chunked_prefill=False)
    chunked = mk.simulate_batching(SHORT + [LONG], _cached_free, token_budget=512, chunked_prefill=True)
    # Unchunked, one step computes the whole prompt beside the three decodes: every running request waits for it.
    assert max(r.max_itl for r in whole[:3]) == pytest.approx(_cached_free(3000, 3, 0), rel=1e-12)
    # Chunked, a step holds at most 512 tokens: three decodes and a 509-token chunk.
    assert max(r.max_itl for r in chunked[:3]) == pytest.approx(_cached_free(509, 3, 0), rel=1e-12)
    # The price: the long prompt's own first token comes later (six steps instead of one).
    assert chunked[3].ttft > whole[3].ttft


def test_prefill_first_pauses_decodes_for_every_chunk():
    steps = mk.batching_steps(SHORT + [LONG], _cached_free, token_budget=512, policy="prefill_first")
    assert all(not (s.prefill and s.decode) for s in steps)  # a step computes prompts or decodes, never both
    lats = mk.simulate_batching(SHORT + [LONG], _cached_free, token_budget=512, policy="prefill_first")
    chunks = 5 * _cached_free(512, 0, 0) + _cached_free(3000 - 5 * 512, 0, 0)  # six chunk steps back to back
    # ... then the next decode step, which the long request joins: four sequences.
    assert max(r.max_itl for r in lats[:3]) == pytest.approx(chunks + _cached_free(0, 4, 0), rel=1e-12)


def test_continuous_batching_admits_a_late_request_at_the_next_step():
    steps = mk.batching_steps(SHORT + [LONG], _cached_free, token_budget=4096, chunked_prefill=False)
    first = next(s for s in steps if any(i == 3 for i, _ in s.prefill))
    before = [s for s in steps if s.start < LONG[0]]
    assert first.start == before[-1].start + before[-1].seconds  # the step right after it arrived


def test_static_batching_admits_only_into_an_empty_engine():
    late = (0.05, 100, 3)
    lats = mk.simulate_batching(SHORT + [late], _cached_free, token_budget=4096, chunked_prefill=False,
                                policy="static")
    batch_done = max(r.finish for r in lats[:3])
    assert lats[3].ttft == pytest.approx(batch_done + _cached_free(100, 0, 0) - late[0], rel=1e-12)
    continuous = mk.simulate_batching(SHORT + [late], _cached_free, token_budget=4096, chunked_prefill=False)
    assert continuous[3].ttft < lats[3].ttft / 5


def test_a_static_batch_is_formed_whole_even_when_its_prompts_are_chunked():
    steps = mk.batching_steps([(0.0, 300, 2), (0.0, 300, 2), (0.0, 10, 2)], affine_step, token_budget=256,
                              policy="static", max_seqs=2)
    assert steps[0].prefill == ((0, 256),) and steps[1].prefill == ((0, 44), (1, 212))
    assert all(2 not in s.decode and all(i != 2 for i, _ in s.prefill) for s in steps[:4])  # waits for 0 and 1


# ---------------------------------------------------------------------------------------------
# Properties of every schedule
# ---------------------------------------------------------------------------------------------

requests_st = st.lists(st.tuples(st.sampled_from([0.0, 0.01, 0.05, 0.2]), st.integers(1, 300), st.integers(1, 6)),
                       min_size=1, max_size=6)


@settings(max_examples=30, deadline=None)
@given(requests=requests_st, budget=st.integers(8, 400), chunked=st.booleans(),
       policy=st.sampled_from(mk.scheduling.POLICIES), max_seqs=st.integers(1, 8))
def test_every_token_is_computed_once_and_every_step_fits_the_budget(requests, budget, chunked, policy, max_seqs):
    if not chunked:
        budget = max(budget, max(p for _, p, _ in requests))
    steps = mk.batching_steps(requests, affine_step, budget, chunked_prefill=chunked, policy=policy,
                              max_seqs=min(max_seqs, budget))
    prefilled, decoded = _per_request(steps, len(requests))
    assert prefilled == [p for _, p, _ in requests]  # every prompt token exactly once
    assert decoded == [o - 1 for _, _, o in requests]  # the first token comes from the prefill
    for step in steps:
        assert 1 <= step.num_tokens <= budget
        served = {i for i, _ in step.prefill} | set(step.decode)
        assert len(served) <= min(max_seqs, budget)
        assert all(requests[i][0] <= step.start for i in served)  # nobody runs before arriving
    for before, after in itertools.pairwise(steps):
        assert after.start >= before.start + before.seconds  # one step at a time


@settings(max_examples=30, deadline=None)
@given(requests=requests_st, budget=st.integers(300, 400), policy=st.sampled_from(mk.scheduling.POLICIES))
def test_latencies_are_read_from_the_token_times(requests, budget, policy):
    lats = mk.simulate_batching(requests, affine_step, budget, policy=policy)
    assert lats == mk.simulate_batching(requests, affine_step, budget, policy=policy)  # deterministic
    for (arrival, _, output), r in zip(requests, lats):
        assert r.ttft > 0 and r.finish >= arrival + r.ttft - 1e-12
        if output == 1:
            assert math.isnan(r.tpot) and math.isnan(r.max_itl)
        else:
            assert r.tpot <= r.max_itl + 1e-15
            assert r.finish == pytest.approx(arrival + r.ttft + r.tpot * (output - 1), rel=1e-9)


def test_summary_of_a_workload():
    lats = [mk.RequestLatency(0.1, 0.01, 0.03, 1.0), mk.RequestLatency(0.3, math.nan, math.nan, 2.0),
            mk.RequestLatency(0.2, 0.02, 0.05, 1.5)]
    assert mk.summarize_latencies(lats) == mk.LatencySummary(median_ttft=0.2, median_tpot=0.015, worst_itl=0.05,
                                                             last_finish=2.0)
    with pytest.raises(ValueError, match="non-empty sequence of RequestLatency"):
        mk.summarize_latencies([])


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("requests, budget, kwargs, message", [
    ([], 64, {}, "at least one"),
    ([(0.0, 10)], 64, {}, r"request 0 must be \(arrival_s, prompt_tokens, output_tokens\)"),
    ([(0.0, 10, 2), (-1.0, 10, 2)], 64, {}, "arrival_s of request 1 must be a finite number"),
    ([(float("nan"), 10, 2)], 64, {}, "arrival_s of request 0"),
    ([(0.0, 0, 2)], 64, {}, "prompt_tokens of request 0 must be a positive integer"),
    ([(0.0, 10, 2.0)], 64, {}, "output_tokens of request 0 must be a positive integer"),
    ([(0.0, 10, 2)], 0, {}, "token_budget must be a positive integer"),
    ([(0.0, 10, 2)], 64, {"policy": "fifo"}, "policy must be one of"),
    ([(0.0, 10, 2)], 64, {"max_seqs": 65}, r"max_seqs \(65\) must not exceed token_budget \(64\)"),
    ([(0.0, 100, 2)], 64, {"chunked_prefill": False}, r"a prompt of 100 tokens exceeds token_budget \(64\)"),
])
def test_bad_input_is_refused_with_the_rule(requests, budget, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mk.simulate_batching(requests, affine_step, budget, **kwargs)


@pytest.mark.parametrize("step, message", [
    (42, "step_seconds must be callable"),
    (lambda p, d, c: 0.0, r"step_seconds\(10, 0, 0\) returned 0.0: it must be a positive"),
    (lambda p, d, c: float("inf"), "returned inf"),
    (lambda p, d, c: "1", "returned '1'"),
])
def test_a_bad_step_time_is_refused(step, message):
    with pytest.raises(ValueError, match=message):
        mk.simulate_batching([(0.0, 10, 2)], step, 64)


# ---------------------------------------------------------------------------------------------
# The roofline step time of a real model on a real GPU
# ---------------------------------------------------------------------------------------------

LLAMA8 = mk.MODEL_FACTS["llama-3-8b"]
H100 = mk.GPUS["h100-sxm"]


def test_roofline_step_reads_the_records():
    step = mk.roofline_step(LLAMA8, H100)
    params = mk.dense_decoder_params(LLAMA8)
    assert step.weight_bytes == 2 * params == 16_060_522_496  # bf16
    assert step.kv_bytes_per_token == 131_072  # 32 layers x 2 x 8 KV heads x 128 x 2 bytes
    assert step.flops_per_token == 2 * (params - 128_256 * 4096)  # no FLOPs for the embedding lookup
    assert step.flops_per_cached_token == 32 * 4 * 32 * 128  # layers x 2 FLOPs x 2 (scores, mix) x h x d_h


def test_a_decode_step_is_bound_by_bytes_and_a_long_prefill_by_flops():
    step = mk.roofline_step(LLAMA8, H100)
    decode = step(0, 1, 1000)  # one sequence with 1,000 cached tokens
    assert decode == pytest.approx((16_060_522_496 + 131_072 * 1001) / 3.35e12, rel=1e-12)
    prefill = step(4096, 0, 0)
    assert prefill == pytest.approx(step.flops_per_token * 4096 / 989e12, rel=1e-12)
    assert step(64, 0, 0) < 1.01 * step(1, 0, 0)  # up to the ridge, more tokens are nearly free


@pytest.mark.parametrize("counts", [(-1, 0, 0), (0, 1.0, 0), (0, 0, True)])
def test_roofline_step_refuses_counts_that_are_not_whole(counts):
    with pytest.raises(ValueError, match="must be integers >= 0"):
        mk.roofline_step(LLAMA8, H100)(*counts)


def test_roofline_step_needs_a_countable_model_and_a_gpu():
    with pytest.raises(ValueError, match="expected a ModelFacts record and an Accelerator"):
        mk.roofline_step(LLAMA8.config, H100)
    with pytest.raises(ValueError, match="param_layout 'llama'"):
        mk.roofline_step(mk.MODEL_FACTS["gpt2"], H100)
