"""mha_kit.policy: schedulers and cache policies against hand-worked cases and closed forms."""
import pytest

import mha_kit as mk
from mha_kit.policy import (block_cache_hits, max_concurrent_sequences, preemption_costs, queue_finish_times, stampede_prefill,
                            static_batches, time_average_in_system, vtc_finish_times)

LLAMA8, H100, PCIE5 = mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"], mk.LINKS["pcie5-x16"]


def test_preemption_costs_by_hand():
    cost = preemption_costs(LLAMA8, 4096, H100, PCIE5)
    assert cost.cache_bytes == 4096 * 32 * 2 * 8 * 128 * 2  # tokens x layers x (K, V) x h_kv x d_h x bf16
    assert cost.swap_out_s == cost.swap_in_s == pytest.approx(cost.cache_bytes / 64e9)
    flops = mk.prefill_flops(LLAMA8, 4096)
    assert cost.recompute_s == pytest.approx(max(flops / 989e12, (2 * mk.dense_decoder_params(LLAMA8) + cost.cache_bytes) / 3.35e12))
    assert cost.recompute_s == pytest.approx(flops / 989e12)  # 4K tokens of prefill are compute-bound


def test_recompute_grows_faster_than_swap():
    short, long = (preemption_costs(LLAMA8, n, H100, PCIE5) for n in (1024, 8192))
    assert long.swap_out_s / short.swap_out_s == pytest.approx(8)  # bytes are linear in tokens
    assert long.recompute_s / short.recompute_s > 8  # causal attention adds a quadratic term


def test_static_batches_hand_worked():
    # batch {0, 1} closes full at t=1, runs 1 s; {2, 3} full at t=3; {10} waits 5 s and closes at 15
    latencies, sizes = static_batches([0, 1, 2, 3, 10], max_batch=2, max_wait_s=5, batch_seconds=lambda b: 1.0)
    assert sizes == [2, 2, 1]
    assert latencies == [2.0, 1.0, 2.0, 1.0, 6.0]


def test_static_batch_fills_while_the_server_is_busy():
    # {0} starts at once and runs to t=10; 1, 2 and 3 queue meanwhile and start together at t=10
    latencies, sizes = static_batches([0, 1, 2, 3], max_batch=4, max_wait_s=0, batch_seconds=lambda b: 10.0)
    assert sizes == [1, 3] and latencies == [10.0, 19.0, 18.0, 17.0]


def test_static_batch_waits_for_a_busy_server():
    # both batches close at once-filled times, the second must wait for the first to end at t=10
    latencies, sizes = static_batches([0, 0, 1, 1], max_batch=2, max_wait_s=0, batch_seconds=lambda b: 10.0)
    assert sizes == [2, 2] and latencies == [10.0, 10.0, 19.0, 19.0]


JOBS = [(0.0, 1, 5.0), (1.0, 0, 1.0), (1.5, 2, 0.5), (2.0, 0, 1.0)]  # (arrival, priority, service)


@pytest.mark.parametrize("policy, expected", [
    ("fcfs", [5.0, 6.0, 6.5, 7.5]),  # arrival order after the first job
    ("priority", [5.0, 6.0, 7.5, 7.0]),  # priority 0 jobs first (1 then 3), then 2
    ("sjf", [5.0, 6.5, 5.5, 7.5]),  # the 0.5 s job first, then the two 1 s jobs by arrival
])
def test_queue_policies_hand_worked(policy, expected):
    assert queue_finish_times(JOBS, policy) == expected


def test_shortest_first_starves_a_long_job():
    long_job = [(0.0, 0, 0.0), (0.1, 0, 5.0)]  # a long job arrives while short ones keep coming
    shorts = [(0.05 + 0.5 * k, 0, 0.5) for k in range(20)]
    fcfs, sjf = (queue_finish_times(long_job + shorts, p) for p in ("fcfs", "sjf"))
    assert sjf[1] > fcfs[1]  # the long job finishes later under SJF: it is always the longest waiting
    assert sum(sjf) < sum(fcfs)  # but the mean latency is lower


def test_vtc_serves_the_light_client_first():
    # client "a" dumps 4 requests at t=0, client "b" sends one at t=0.5; each costs 1 s
    jobs = [(0.0, "a", 10, 10, 1.0)] * 4 + [(0.5, "b", 10, 10, 1.0)]
    fcfs = queue_finish_times([(a, 0, s) for a, _, _, _, s in jobs], "fcfs")
    vtc = vtc_finish_times(jobs)
    assert fcfs[4] == 5.0  # behind all of a's requests
    # at t=1 b's counter is lifted to a's (30): a tie, which a wins by arrival; then b (30 < 60)
    assert vtc[4] == 3.0
    assert sorted(vtc[:4]) == [1.0, 2.0, 4.0, 5.0]


def test_vtc_lifts_an_idle_client():
    # "b" idles while "a" is served; without the lift b would get every later slot first
    jobs = [(0.0, "a", 0, 1, 1.0), (0.0, "a", 0, 1, 1.0), (0.0, "a", 0, 1, 1.0), (0.5, "b", 0, 1, 1.0),
            (0.5, "b", 0, 1, 1.0)]
    vtc = vtc_finish_times(jobs, input_weight=1, output_weight=1)
    # a (1) at t=1; b lifted to 1, ties with a, a wins by arrival (2); b (1 < 2) at 3; tie again: a, then b
    assert vtc == [1.0, 2.0, 4.0, 3.0, 5.0]


@pytest.mark.parametrize("policy, computed, finish", [
    ("on_schedule", 10, [1, 1]),  # the second request reuses the block the first is computing
    ("after_step", 18, [1, 1]),  # both compute the 8-token prefix: a stampede
    ("hold_duplicates", 10, [1, 2]),  # the second waits one step, then reuses it
])
def test_stampede_hand_worked(policy, computed, finish):
    # 2 requests, prefix 8 tokens (two blocks of 4), 1 own token, a budget of 32 tokens per step
    assert stampede_prefill(2, 8, 1, 4, 32, policy) == (computed, finish)


def test_stampede_chunks_share_what_is_scheduled():
    # a budget of 8 per step: the leader computes 8 + 4 tokens; the others arrive to a cached prefix
    assert stampede_prefill(3, 10, 2, 4, 8, "on_schedule") == (12 + 4 + 4, [2, 2, 3])


def test_littles_law_identity():
    arrivals, finishes = [0.0, 1.0, 1.5, 4.0], [2.0, 4.0, 2.5, 5.0]
    span = 5.0
    mean_latency = sum(f - a for a, f in zip(arrivals, finishes)) / 4
    assert time_average_in_system(arrivals, finishes) == pytest.approx(4 / span * mean_latency)


def test_max_concurrent_sequences_by_hand():
    free = int(0.9 * 80e9) - 2 * mk.dense_decoder_params(LLAMA8)
    assert max_concurrent_sequences(LLAMA8, H100, 2000) == free // (2000 * 131072)


def test_block_cache_lru_against_lfu_hand_worked():
    # blocks of 2, room for 2 blocks. A is used twice, then B, then C: LRU drops A, LFU keeps it
    a, b, c = [1, 2], [3, 4], [5, 6]
    stream = [a, a, b, c, a]
    assert block_cache_hits(stream, 2, 2, "lru") == [0, 2, 0, 0, 0]  # C evicts A (least recent)
    assert block_cache_hits(stream, 2, 2, "lfu") == [0, 2, 0, 0, 2]  # C evicts B (used once, older)


def test_block_cache_reuses_leading_blocks_only():
    # the second prompt shares the first block only: its second block differs, its third is not reached
    assert block_cache_hits([[1, 2, 3, 4, 5, 6], [1, 2, 9, 9, 5, 6]], 10, 2) == [0, 2]
    # deepest block of the old request goes first under LRU: the shared first block survives
    assert block_cache_hits([[1, 2, 3, 4], [7, 8], [1, 2, 3, 4]], 2, 2) == [0, 0, 2]


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="policy must be one of"):
        block_cache_hits([[1, 2]], 2, 2, "fifo")
    with pytest.raises(ValueError, match="Accelerator and a Link"):
        preemption_costs(LLAMA8, 10, H100, 64e9)
    with pytest.raises(ValueError, match="non-decreasing"):
        static_batches([1, 0], 2, 1, lambda b: 1.0)
    with pytest.raises(ValueError, match="max_batch must be a positive integer"):
        static_batches([0], 0, 1, lambda b: 1.0)
    with pytest.raises(ValueError, match="policy must be one of"):
        queue_finish_times(JOBS, "lifo")
    with pytest.raises(ValueError, match="3-tuples"):
        queue_finish_times([(0, 1)], "fcfs")
    with pytest.raises(ValueError, match="finite number >= 0"):
        vtc_finish_times([(-1, "a", 1, 1, 1.0)])
    with pytest.raises(ValueError, match="policy must be one of"):
        stampede_prefill(2, 8, 1, 4, 32, "lru")
    with pytest.raises(ValueError, match="finish >= arrival"):
        time_average_in_system([1.0], [0.0])
    with pytest.raises(ValueError, match="do not fit"):
        max_concurrent_sequences(mk.MODEL_FACTS["llama-3-70b"], H100, 100)


def test_token_bucket_hand_worked():
    """600 tokens a minute = 10 a second, bucket of 600: the arithmetic written out."""
    waits = mk.token_bucket_waits([(0.0, 500), (1.0, 200), (20.0, 200), (20.0, 150)], 600)
    # t=0: 600 held, 500 taken -> 100. t=1: 100 + 10 = 110 < 200 -> wait (200 - 110) / 10 = 9 s, nothing taken.
    # t=20: 110 + 19 * 10 = 300 >= 200 -> admitted, 100 left. Same instant: 100 < 150 -> wait 5 s.
    assert waits == [0.0, 9.0, 0.0, 5.0]


def test_token_bucket_burst_admits_one_bucket_then_refills():
    waits = mk.token_bucket_waits([(0.0, 500)] * 60, 10_000)  # a minute's 10,000 tokens = 20 requests
    assert waits[:20] == [0.0] * 20 and waits[20:] == [3.0] * 40  # 500 tokens at 10,000 / 60 a second
    assert mk.token_bucket_waits([(0.0, 500)] * 60, 10_000, capacity=30_000) == [0.0] * 60


def test_token_bucket_refuses_bad_input():
    with pytest.raises(ValueError, match=r"^tokens_per_minute and capacity must be positive"):
        mk.token_bucket_waits([(0.0, 1)], 0)
    with pytest.raises(ValueError, match=r"^requests must be in order of arrival: 1.0 after 2.0$"):
        mk.token_bucket_waits([(2.0, 1), (1.0, 1)], 60)
    with pytest.raises(ValueError, match=r"^a request of 700 tokens can never fit a bucket of 600$"):
        mk.token_bucket_waits([(0.0, 700)], 600)
