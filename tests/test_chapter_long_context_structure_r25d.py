"""Section long_context_structure-contract of "Sparse patterns and long-context evaluation".

A 150,000-word contract against a 128K window: the token count from the stated tokens-per-word ratios, the
prefill FLOPs and cache of each plan for Llama 3.1 8B's shape written out (not through mk.prefill_flops or
mk.kv_cache_bytes), the survival of a detail through summary rewrites, and the share of clause positions a
chunking keeps whole, counted by arithmetic on the chunk grid (not mk.document_windows).
"""
import math

import chapter_outputs

# Llama 3.1 8B (Llama 3 paper Table 3): 32 layers, d 4096, 32 query heads and 8 KV heads of 128, FFN 14336,
# vocabulary 128256; its window 128K (sec. 3.4.2), taken as 2**17 = 131,072
L, D, H, KV, HD, FF, V, CTX = 32, 4096, 32, 8, 128, 14_336, 128_256, 131_072
RATE = 0.5 * 989e12  # H100 SXM dense bf16 FLOP/s at an assumed 50%
WORDS, ASK, ANSWER, NOTE, QUOTE = 150_000, 1_024, 1_024, 2_048, 1_024
DOC = WORDS * 100 // 75  # 100 tokens per 75 words
NB = chapter_outputs.notebook("long_context_structure")


def glued(key):
    return chapter_outputs.glued(NB, key)


def flops(n):  # weights once per token, last token's logits, causal attention (scores and value mix)
    weights = 2 * n * L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF)
    return weights + 2 * V * D + L * 2 * H * HD * n * (n + 1)


def kv_bytes(n):  # K and V, bf16, every layer
    return 2 * L * KV * HD * n * 2


def windows(n, size, overlap):  # lengths of the windows stepping size - overlap, the last ending at n
    step = size - overlap
    count = 1 + math.ceil(max(n - size, 0) / step)
    return [min(k * step + size, n) - k * step for k in range(count)]


def test_token_count():
    assert DOC == 200_000 and glued("lcs_ct_tokens") == "200,000"
    assert glued("lcs_ct_over") == f"{DOC / CTX:.2f}" == "1.53"
    assert glued("lcs_ct_llama_tokens") == f"{round(WORDS * 5.5 / 3.94):,}" == "209,391"
    assert WORDS > CTX  # even one token a word does not fit


def test_plans():
    w32, halves = windows(DOC, 32_768, 2_048), windows(DOC, 101_024, 2_048)
    assert len(w32) == 7 and len(halves) == 2 and glued("lcs_ct_windows") == "7"
    room = CTX - ASK - ANSWER
    assert room == 129_024 and DOC - room == 70_976
    assert glued("lcs_ct_cut") == f"{(DOC - room) / DOC:.0%}" == "35%"
    plans = {"truncate": [room], "rag": [8 * 512], "extract": w32 + [7 * QUOTE], "two": halves + [2 * QUOTE]}
    secs = {k: sum(flops(p + ASK) for p in v) / RATE for k, v in plans.items()}
    cache = {k: kv_bytes(max(v) + ASK + ANSWER) for k, v in plans.items()}
    assert glued("lcs_ct_trunc_s") == f"{secs['truncate']:.1f}" == "12.6"
    assert glued("lcs_ct_rag_s") == f"{secs['rag']:.2f}" == "0.16"
    assert glued("lcs_ct_extract_s") == f"{secs['extract']:.1f}" == "10.2"
    assert glued("lcs_ct_two_s") == f"{secs['two']:.1f}" == "16.9"
    assert cache["truncate"] == 16 * 2 ** 30  # the full 131,072-token window
    assert glued("lcs_ct_extract_kv") == f"{cache['extract'] / 2 ** 30:.1f} GiB" == "4.2 GiB"
    assert glued("lcs_ct_two_kv") == f"{cache['two'] / 2 ** 30:.1f} GiB" == "12.6 GiB"
    out = chapter_outputs.printed(NB, "plans = {")
    assert "truncation never reads 70,976 tokens, 35.5% of the contract" in out
    assert "running summary" in out and f"{sum(w32) + ASK * 7 + NOTE * 6:,}" in out  # 231,744 tokens read


def test_summary_survival():
    p, m = 0.9, 7
    first = p ** m
    mean = p * (1 - p ** m) / (1 - p) / m  # geometric series over the 7 windows
    assert glued("lcs_ct_first_09") == f"{first:.0%}" == "48%"
    assert glued("lcs_ct_avg_09") == f"{mean:.0%}" == "67%"
    assert glued("lcs_ct_mr_09") == "81%"
    assert glued("lcs_ct_compress") == f"{DOC / NOTE:.0f}" == "98"


def whole_count(n, size, overlap, clause):  # starts s whose clause [s, s + clause) lies in one chunk
    step = size - overlap
    count = 1 + math.ceil(max(n - size, 0) / step)
    hits = 0
    for s in range(n - clause + 1):
        k = min(s // step, count - 1)  # the chunk starting last at or before s
        hits += min(k * step + size, n) >= s + clause
    return hits


def test_clause_split():
    total = DOC - 300 + 1
    counts = {o: whole_count(DOC, 512, o, 300) for o in (0, 128, 256)}
    assert counts == {0: 83_091, 128: 110_781, 256: 166_161}
    # away from the document's end, the share is (size - clause + 1) / step
    assert abs(counts[128] / total - (512 - 300 + 1) / 384) < 1e-3
    assert glued("lcs_ct_split_300_0") == f"{1 - counts[0] / total:.0%}" == "58%"
    assert glued("lcs_ct_whole_300_128") == f"{counts[128] / total:.0%}" == "55%"
    assert glued("lcs_ct_whole_300_256") == f"{counts[256] / total:.0%}" == "83%"
    assert glued("lcs_ct_reach_300_128") == f"{0.9 * counts[128] / total:.0%}" == "50%"
    out = chapter_outputs.printed(NB, "def contained(")
    assert f"whole in one chunk at {counts[0]:>7,} of {total:,} starts" in out
    assert whole_count(DOC, 512, 128, 100) == DOC - 100 + 1  # an overlap at least the clause keeps it whole


def test_decode_floor():
    # Llama 3.1 8B's weights from the shape (untied embedding and head, two norms a layer and a final one), bf16,
    # read once a decoded token at the H100 SXM's 3.35 TB/s
    params = L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF + 2 * D) + 2 * V * D + D
    assert params == 8_030_261_248
    step = 2 * params / 3.35e12
    assert glued("lcs_ct_step_ms") == f"{step * 1e3:.1f}" == "4.8"
    assert glued("lcs_ct_note_s") == f"{NOTE * step:.1f}" == "9.8"
    assert glued("lcs_ct_run_decode_s") == f"{7 * NOTE * step:.0f}" == "69"
    w32 = windows(DOC, 32_768, 2_048)
    running = [w32[0]] + [w + NOTE for w in w32[1:]]
    prefill = sum(flops(p + ASK) for p in running) / RATE
    assert glued("lcs_ct_run_prefill_s") == f"{prefill:.1f}"
    assert 7 * NOTE * step > 5 * prefill  # decode, not prefill, sets the running summary's latency


def test_silence_argument():
    # the section must not claim truncation leaves a trace, nor that quote checking makes a miss visible
    text = "".join("".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown")
    assert "but the others leave a trace" not in text and "no longer silent" not in text
    assert "a false NONE" in text and "{cite:p}`ollama8099`" in text and "{cite:p}`ollama3839`" in text
