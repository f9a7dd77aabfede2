"""The numbers the chapter "Scheduling and cache policy" states, recomputed by hand."""
import mha_kit as mk

L8 = mk.MODEL_FACTS["llama-3-8b"]
KV_PER_TOKEN = 32 * 2 * 8 * 128 * 2  # layers x (K, V) x h_kv x d_h x bf16 bytes


def test_swap_against_recompute_at_4k():
    cache = 4096 * KV_PER_TOKEN
    assert cache == 512 * 2**20
    swap_ms = 2 * cache / 64e9 * 1e3  # out and back over PCIe Gen5 x16, 64 GB/s each way
    recompute_ms = mk.prefill_flops(L8, 4096) / 989e12 * 1e3  # compute-bound at the bf16 peak
    assert f"{swap_ms:.1f}" == "16.8" and f"{recompute_ms:.1f}" == "62.3"


def test_stampede_counts():
    prefix, own, n = 4000, 100, 16
    assert prefix + n * own == 5_600  # the prefix once
    assert 2 * (prefix + own) + (n - 2) * own == 9_600  # two requests in the first step of 8,192 tokens
    assert 4 * (prefix + own) + (n - 4) * own == 17_600  # four in a step of 16,384
    assert mk.stampede_prefill(n, prefix, own, 16, 8192, "after_step")[0] == 9_600


def test_hosted_cache_prices():
    prefix, calls = 10_000, 20
    assert f"{100 * (1.25 + 19 * 0.1) / 20:.1f}" == "15.8"  # Anthropic, 5-minute writes
    assert f"{100 * (2.0 + 19 * 0.1) / 20:.1f}" == "19.5"  # 1-hour writes
    hit = 1024 + (prefix - 1024) // 128 * 128
    assert hit == 9_984
    assert f"{100 * (prefix + 19 * (0.1 * hit + prefix - hit)) / (calls * prefix):.1f}" == "14.6"


def test_littles_law_ceilings():
    n_fit = (int(0.9 * 80e9) - 2 * mk.dense_decoder_params(L8)) // (1200 * KV_PER_TOKEN)
    assert n_fit == 355
    assert round(989e12 / mk.generation_flops(L8, 1000, 200)) == 57


def test_token_bucket_burst_claim():
    """scheduler_design-fairness: 10,000 tokens a minute admit 20 of 60 requests of 500 at once."""
    capacity, rate, request = 10_000, 10_000 / 60, 500
    admitted = capacity // request  # the full bucket pays for 20 requests at t = 0
    assert admitted == 20
    assert request / rate == 3.0  # the retry-after of each rejected request: one request's refill
    assert (60 - admitted) * request / rate == 120.0  # the refill the other 40 need, one after another
    waits = mk.token_bucket_waits([(0.0, request)] * 60, 10_000)
    assert sum(w == 0 for w in waits) == admitted and max(waits) == 3.0


def test_hosted_caching_why_a_read_is_cheap():
    """scheduler_design-hosted-caching: a 10,000-token prefix of a Llama 3 70B-shaped model."""
    per_token = 80 * 2 * 8 * 128 * 2  # layers x (K, V) x KV heads x head dim x bf16 bytes (Llama 3 70B, GQA)
    llama70 = mk.MODEL_FACTS["llama-3-70b"]
    assert mk.kv_cache_bytes_per_token(llama70.config) == per_token == 320 * 1024
    assert round(10_000 * per_token / 2**30, 1) == 3.1  # GiB held for the time to live
    flops = 2 * mk.model_params(llama70) * 10_000
    assert round(flops / 989e12, 1) == 1.4  # s of one H100 at its dense bf16 peak
    assert round(10_000 * per_token / 3.35e12 * 1e3, 1) == 1.0  # ms to read the stored K,V from HBM


def test_two_model_pool_is_nearly_full_even_with_full_hot_batches():
    # A static batch of b requests of 500 prompt and 100 answer tokens on Llama 3 8B, H100 roofline steps.
    step = mk.roofline_step(L8, mk.GPUS["h100-sxm"])

    def batch_seconds(b):
        lats = mk.simulate_batching([(0.0, 500, 100)] * b, step, token_budget=b * 500, chunked_prefill=False,
                                    policy="static")
        return max(r.finish for r in lats)

    hot = 30.0 * batch_seconds(32) / 32  # 30 requests/s in full batches of 32
    quiet = 0.5 * batch_seconds(1)  # 0.5 requests/s, each alone
    assert 0.70 < hot < 0.78 and 0.22 < quiet < 0.26
    assert hot + quiet > 0.95  # why EDF's p99s sit just past the 2 s target
