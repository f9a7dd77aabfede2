"""Section beyond_kv_cache-snapkv-gqa: SnapKV's per-query-head selection (repeat_kv) against group-pooled,
per-KV-head selection. Llama 3 8B's shape from the Llama 3 paper (Table 3: 32 layers, 32 query heads,
8 KV heads of 128); SnapKV's default budget of 2,048 (init_snapkv, max_capacity_prompt); bf16."""
import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("beyond_kv_cache")
LAYERS, HEADS, KV_HEADS, HEAD_DIM, BUDGET = 32, 32, 8, 128, 2048


def _bytes(kv_heads, tokens):
    return 2 * LAYERS * kv_heads * HEAD_DIM * 2 * tokens  # K and V, 2 bytes each


def test_bytes_table():
    out = chapter_outputs.printed(NB, "sg_budget, sg_prompt")
    assert _bytes(KV_HEADS, 32768) == 4 * 2**30
    assert _bytes(HEADS, BUDGET) == 2**30  # per query head: g = 4 times
    assert _bytes(KV_HEADS, BUDGET) == 256 * 2**20
    assert "full GQA cache, 32K prompt       4 GiB" in out
    assert "per query head (repeat_kv)       1 GiB" in out
    assert "per KV head (group-pooled)     256 MiB" in out
    equiv = _bytes(HEADS, BUDGET) // _bytes(KV_HEADS, 1)
    assert equiv == 8192 and f"GQA cache of {equiv:,} tokens" in out
    assert chapter_outputs.glued(NB, "bk_sg_rep") == "1 GiB"
    assert chapter_outputs.glued(NB, "bk_sg_pooled") == "256 MiB"
    assert chapter_outputs.glued(NB, "bk_sg_equiv") == "8,192"


def test_group_pooling_toy():
    rng = np.random.default_rng(3)
    votes = rng.dirichlet(np.ones(12), size=4)
    lines = chapter_outputs.printed(NB, "sg_rng = ").strip().splitlines()
    pooled = np.array([votes[0:2].mean(0), votes[2:4].mean(0)])
    for head in range(4):
        own = sorted(np.argsort(-votes[head])[:4].tolist())
        group = sorted(np.argsort(-pooled[head // 2])[:4].tolist())
        kept_own, kept_group = votes[head, own].sum(), votes[head, group].sum()
        assert kept_group <= kept_own  # the pooled set never beats the head's own top-k on its own votes
        assert lines[head] == (f"query head {head} (KV head {head // 2}): own set {own}, group set {group}, "
                               f"its votes kept {kept_own:.2f} -> {kept_group:.2f}")
    assert lines[-1] == "sets stored: 4 per query head, 2 per KV head"


def test_drill_llama3_70b():
    """The drill's answer (Llama 3 70B: 80 layers, 64 query heads, 8 KV heads of 128) against a recomputation."""
    layers, q_heads, kv_heads = 80, 64, 8
    group = q_heads // kv_heads
    per_kv = 2 * layers * kv_heads * HEAD_DIM * 2 * BUDGET
    per_q = group * per_kv
    prompt = per_q // (2 * layers * kv_heads * HEAD_DIM * 2)
    assert per_kv == 640 * 2**20 and per_q == 5 * 2**30 and prompt == 16384
    drill = chapter_outputs.section(NB, "beyond_kv_cache-snapkv-gqa", kinds=("markdown",))
    answer = drill[drill.index("Drill: Llama 3 70B"):]
    assert f"= {per_kv // 2**20}$ MiB" in answer
    assert f"$g = {group}$ times that, {per_q // 2**30} GiB" in answer
    assert f"GQA cache of a {prompt // 1024}K-token prompt" in answer


def test_decode_and_prefill_factor():
    out = chapter_outputs.printed(NB, "sg_budget, sg_prompt")
    dec_rep, dec_gqa = _bytes(HEADS, 8192), _bytes(KV_HEADS, 8192)
    assert (dec_rep, dec_gqa) == (4 * 2**30, 2**30)
    peak_rep, peak_gqa = _bytes(HEADS, 32768) // LAYERS, _bytes(KV_HEADS, 32768) // LAYERS
    assert peak_rep == 32768 * HEADS * HEAD_DIM * 2 * 2 == 512 * 2**20 and peak_gqa == 128 * 2**20
    assert "8,192 generated tokens: repeated 4 GiB, GQA 1 GiB" in out
    assert "before compression: repeated 512 MiB, GQA 128 MiB" in out
    for key, want in (("bk_sg_dec_rep", "4 GiB"), ("bk_sg_dec_gqa", "1 GiB"),
                      ("bk_sg_peak_rep", "512 MiB"), ("bk_sg_peak_gqa", "128 MiB")):
        assert chapter_outputs.glued(NB, key) == want
