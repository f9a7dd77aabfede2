"""Section serving_operations-max-model-len, recomputed from the formulas and the sources' constants.

vLLM 0.6.3 (V0): SchedulerConfig.__init__ sets max_num_batched_tokens to max(max_model_len, 2048) with chunked
prefill off and to 512 with it on; EngineArgs.create_engine_config turns chunked prefill on by default when
max_model_len > 32768. vLLM 0.10.1.1 (V1): chunked prefill always on, 16384 tokens for the LLM class (8192 for the server) on an H100.
The pool is utilisation x total - weights - activations (Worker.determine_num_available_blocks). Qwen2.5-7B's
config.json written out: 28 layers, hidden 3584, 28 query and 4 KV heads of 128, intermediate 18944, vocabulary
152064, untied head. The logged hit rate: PrefixCachingMetrics, hits / queries over the recent requests, whole
blocks only and never the last prompt token (KVCacheManager.get_computed_blocks).
"""
import chapter_outputs

L, D, H, KV, HD, FF, V = 28, 3584, 28, 4, 128, 18944, 152_064
HBM, UTIL = 80e9, 0.9
KV_TOKEN = 2 * L * KV * HD * 2  # K and V, every layer, bf16
WEIGHTS = 2 * (L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF) + 2 * V * D)  # bf16, no biases or norms


def v0_budget(max_model_len, chunked=None):
    if chunked is None:
        chunked = max_model_len > 32768  # the V0 default for a text-only CUDA model without sliding window
    return 512 if chunked else max(max_model_len, 2048)


def activations(tokens):  # residual stream, q/k/v, and the two SwiGLU intermediates, bf16
    return 2 * tokens * (D + (H + 2 * KV) * HD + 2 * FF)


def pool(budget):
    return int(UTIL * HBM) - WEIGHTS - activations(budget)


def glue():
    nb = chapter_outputs.notebook("serving_operations")
    return chapter_outputs.cell_glue(nb, "def v0_budget(")


def test_kv_bytes_per_token_and_weights():
    assert KV_TOKEN == 57_344
    assert f"weights {WEIGHTS / 1e9:.1f} GB, KV {KV_TOKEN:,} B a token" in chapter_outputs.printed(
        chapter_outputs.notebook("serving_operations"), "def v0_budget(")


def test_v0_budgets_follow_the_threshold():
    g = glue()
    assert v0_budget(8192) == 8192 and v0_budget(40960) == 512 and v0_budget(40960, chunked=False) == 40960
    assert g["so_ml_budget_v0_8192_off"] == "8,192"
    assert g["so_ml_budget_v0_40960_on"] == "512"
    assert g["so_ml_budget_v0_40960_off"] == "40,960"
    assert g["so_ml_budget_v1_8192_on"] == g["so_ml_budget_v1_40960_on"] == "16,384"
    assert g["so_ml_pool_v1_8192_on"] == g["so_ml_pool_v1_40960_on"] == f"{pool(16384) / 1e9:.1f}"


def test_pools_and_the_lost_tokens():
    g = glue()
    for key, budget in (("v0_8192_off", 8192), ("v0_40960_on", 512), ("v0_40960_off", 40960), ("v1_40960_on", 16384)):
        assert g[f"so_ml_pool_{key}"] == f"{pool(budget) / 1e9:.1f}"
        assert g[f"so_ml_tokens_{key}"] == f"{pool(budget) // KV_TOKEN:,}"
        assert g[f"so_ml_act_{key}"] == f"{activations(budget) / 1e9:.2f}"
    lost = pool(8192) - pool(40960)
    assert g["so_ml_lost_gb"] == f"{lost / 1e9:.1f}"
    assert g["so_ml_lost_tok"] == f"{lost // KV_TOKEN:,}"
    assert pool(512) > pool(8192) > pool(40960)  # the small chunked budget profiles the smallest pass


def test_hit_rate_sequence():
    g = glue()
    for n, expected_hits in ((1000, 992), (40, 32)):
        hits = sum(16 for start in range(0, n - 1, 16) if start + 16 <= n - 1)  # whole blocks below the last token
        assert hits == expected_hits
        queries = hit_total = 0
        seq = []
        for k in range(5):
            queries += n
            hit_total += hits if k else 0  # the first request finds an empty cache
            seq.append(f"{hit_total / queries:.1%}")
        assert g[f"so_hr_seq_{n}"] == ", ".join(seq)
        assert g[f"so_hr_share_{n}"] == f"{hits / n:.1%}"
    assert g["so_hr_seq_1000"].startswith("0.0%, 49.6%, 66.1%")
