"""mha_kit.serving_design against hand-worked values (chapters prefix_caching, serving_reliability)."""

import pytest

import mha_kit as mk


def test_uncached_prefill_is_the_triangular_sum():
    # m n (n + 1) / 2 tokens over n turns without a cache, n m with one
    m, n = 1_000, 30
    assert int(mk.conversation_prefill_tokens(n, m, cached=False).sum()) == m * n * (n + 1) // 2
    assert int(mk.conversation_prefill_tokens(n, m).sum()) == n * m


def test_sliding_window_misses_every_turn_once_full():
    # window of 3 turns: turns 1-3 hit, every later turn re-prefills the 3 turns it keeps
    assert mk.conversation_prefill_tokens(6, 100, window=300).tolist() == [100, 100, 100, 300, 300, 300]


def test_compaction_misses_once_per_cycle_and_the_pinned_prefix_stays():
    # window 400, compact to 200: turn 5 would hold 500, keeps the newest 2 turns (200), 50 pinned tokens hit
    got = mk.conversation_prefill_tokens(8, 100, window=400, compact_to=200, pinned=50).tolist()
    assert got == [100, 100, 100, 100, 150, 100, 100, 150]


@pytest.mark.parametrize("kwargs", [dict(window=50), dict(window=400, compact_to=500), dict(window=400, pinned=100)])
def test_conversation_rejects_impossible_windows(kwargs):
    with pytest.raises(ValueError, match="compact_to <= window"):
        mk.conversation_prefill_tokens(4, 100, **kwargs)


def test_replica_rate_by_hand():
    facts, gpu = mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"]
    kv = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads of 128, bf16 bytes
    weights = 2 * mk.dense_decoder_params(facts)
    fits = (int(0.9 * 80e9) - weights) // (3_000 * kv)
    batch, step, rate = mk.replica_request_rate(facts, gpu, 2_000, 1_000)
    assert batch == min(256, fits) == fits
    read = weights + kv * (batch * 2_500 + batch)  # weights once, the cache at mid-answer, the new tokens
    assert step == pytest.approx(read / 3.35e12)  # decode at this batch is memory-bound
    prefill = mk.prefill_seconds(facts, 2_000, gpu.bf16_flops)
    assert rate == pytest.approx(1 / (prefill + 1_000 * step / batch))


def test_replica_rate_capped_by_max_seqs_and_errors():
    facts, gpu = mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"]
    assert mk.replica_request_rate(facts, gpu, 100, 100, max_seqs=8)[0] == 8
    with pytest.raises(ValueError, match="not one sequence"):
        mk.replica_request_rate(facts, gpu, 10_000_000, 100)
    with pytest.raises(ValueError, match="output_tokens"):
        mk.replica_request_rate(facts, gpu, 100, 0)


def test_multi_model_batches_by_hand():
    # one-second batches; a's head (0.1) is older than b's (0.2) but b holds more when the GPU frees at t = 1
    arrivals, wait = {"a": [0.0, 0.1], "b": [0.2, 0.2]}, {"a": 0.0, "b": 0.0}
    edf = mk.multi_model_batches(arrivals, lambda b: 1.0, 3, wait, policy="edf")
    longest = mk.multi_model_batches(arrivals, lambda b: 1.0, 3, wait, policy="longest")
    assert edf["a"].tolist() == pytest.approx([1.0, 1.9]) and edf["b"].tolist() == pytest.approx([2.8, 2.8])
    assert longest["a"].tolist() == pytest.approx([1.0, 2.9]) and longest["b"].tolist() == pytest.approx([1.8, 1.8])


def test_multi_model_batches_waits_for_the_timeout_or_a_full_batch():
    # a alone: its single request waits 0.5 s for company, then runs for 1 s
    assert mk.multi_model_batches({"a": [0.2]}, lambda b: 1.0, 4, {"a": 0.5})["a"].tolist() == pytest.approx([1.5])
    # a full batch goes at once
    assert mk.multi_model_batches({"a": [0.0, 0.0]}, lambda b: 1.0, 2, {"a": 9.0})["a"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="policy must be"):
        mk.multi_model_batches({"a": [0.0]}, lambda b: 1.0, 2, {"a": 1.0}, policy="fifo")
    with pytest.raises(ValueError, match="max_wait must name every model"):
        mk.multi_model_batches({"a": [0.0]}, lambda b: 1.0, 2, {})
