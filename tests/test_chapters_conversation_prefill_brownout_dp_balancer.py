"""Claims on a growing conversation's prefill, guard-model chunks, brownout, a draft on the CPU, an encoder's output
against its KV and the DP balancer, recomputed by hand, not read from the notebooks."""

import pytest

import mha_kit as mk


def test_growing_conversation_numbers():
    # prefix_caching-growing-conversation: 50 turns of 1,000 tokens
    m, n = 1_000, 50
    uncached = sum(m * i for i in range(1, n + 1))
    assert uncached == 1_275_000 == int(mk.conversation_prefill_tokens(n, m, cached=False).sum())
    assert uncached / (n * m) == 25.5
    billed = sum(0.1 * (i - 1) * m + 1.25 * m for i in range(1, n + 1))  # Anthropic: reads 0.1x, 5-minute writes 1.25x
    assert billed == pytest.approx(185_000) and round(uncached / billed, 1) == 6.9
    # a 32,000-token window, 100 turns: sliding re-prefills the window on each of the 68 turns after it fills
    assert int(mk.conversation_prefill_tokens(100, m, 32_000).sum()) == 32 * m + 68 * 32_000
    # compacting to 16,000 when full misses at turns 33, 50, 67, 84: 4 x 16,000 plus 96 cached turns
    assert int(mk.conversation_prefill_tokens(100, m, 32_000, compact_to=16_000).sum()) == 4 * 16_000 + 96 * m


def test_guard_chunk_arithmetic():
    # serving_operations-guard-models: NeMo Guardrails defaults, chunk 200, context 50
    checks = -(-1_000 // 200)
    assert checks == 5 and 1_000 + 50 * (checks - 1) == 1_200
    assert 200 * 0.040 == pytest.approx(8.0)  # hold-back at the MLPerf interactive 40 ms TPOT


def test_brownout_last_rung_by_hand():
    # serving_reliability-brownout: prompt 1,000, output 250 -> the batch is the max_num_seqs cap of 256
    facts, gpu = mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"]
    kv = 2 * 32 * 8 * 128 * 2
    weights = 2 * mk.dense_decoder_params(facts)
    assert (int(0.9 * 80e9) - weights) // (1_250 * kv) > 256
    step = (weights + kv * (256 * 1_125 + 256)) / 3.35e12
    rate = 1 / (mk.prefill_seconds(facts, 1_000, 989e12) + 250 * step / 256)
    assert mk.replica_request_rate(facts, gpu, 1_000, 250) == (256, pytest.approx(step), pytest.approx(rate))


def test_draft_on_the_cpu_is_slower_than_no_draft():
    # speculative_decoding-draft-placement: Llama 3 8B drafting for 70B on 4 H100s, at alpha 0.8
    target = 2 * mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"]) / (4 * 3.35e12)
    draft = 2 * mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"])

    def best(c):  # Leviathan et al.: E[tokens] = (1 - a^(k+1)) / (1 - a), step cost k c + 1
        return max((1 - 0.8 ** (k + 1)) / 0.2 / (k * c + 1) for k in range(1, 16))

    assert round(best(draft / (4 * 3.35e12) / target), 2) == 2.35
    cpu = draft / (12 * 8 * 6.4e9) / target  # one EPYC 9005 socket, 12 x DDR5-6400
    assert cpu > 2 and best(cpu) == pytest.approx(1.8 / (cpu + 1)) and best(cpu) < 1


def test_encoder_output_against_its_kv():
    # multi_tenant_serving-encoder-disaggregation: 2,693 tokens of a 1080p image into Qwen2.5-7B
    emb = 2_693 * 3_584 * 2
    kv = 2_693 * 2 * 28 * 4 * 128 * 2  # K and V, 28 layers, 4 KV heads of 128, bf16
    assert emb == 19_303_424 and kv / emb == 8.0
    assert emb / 50e9 * 1e3 == pytest.approx(0.386, abs=1e-3)  # ms over one 400 Gb/s port


def test_dp_balancer_rule_picks_c_not_b():
    # multi_tenant_serving-dp-or-router, vLLM 0.34 DPLBAsyncMPClient: waiting + running, plus waiting x 6 x (KV - 0.5)
    engines = {"A": (0, 30, 0.40), "B": (2, 20, 0.95), "C": (0, 26, 0.60)}
    score = {e: w + r + w * 6.0 * max(0.0, kv - 0.5) for e, (w, r, kv) in engines.items()}
    assert score["B"] == pytest.approx(27.4)
    assert min(score, key=score.get) == "C" and min(engines, key=lambda e: sum(engines[e][:2])) == "B"
