"""Section serving_operations-kv-cost-diagnosis of "Serving in production": a 10x inference bill blamed on the KV cache.

The cost table recomputed from the roofline written out here: the cache pool from HBM x 0.9 minus bf16 weights
(Llama 3 8B's parameters counted from its config) minus one 8,192-token step's activations; the batch as the
pool over the bytes each request holds; the decode step as max(bytes read, FLOPs) at the H100 SXM's peaks; the
cost per million output tokens as price x step / batch. KV bytes a token from 2 x layers x KV heads x head size x
bytes, not through mk.kv_cache_bytes_per_token or mk.roofline_step. Then the glued values, the links, citations
and drill-card rubrics.
"""
import re

import pytest
import chapter_outputs
from test_chapter_chains import rubric_problems

NB = chapter_outputs.notebook("serving_operations")
LABEL = "serving_operations-kv-cost-diagnosis"
TEXT = chapter_outputs.section(NB, LABEL, "serving_operations-hosted-bill-triage")
MARKER = "KC_USD_HOUR = 2.0"
TABLE = chapter_outputs.printed(NB, MARKER)

# Llama 3 8B (config.json) and the H100 SXM data sheet, restated
LAYERS, D, HEADS, KV_HEADS, HEAD_DIM, D_FF, VOCAB = 32, 4096, 32, 8, 128, 14336, 128256
HBM, BW, PEAK = 80e9, 3.35e12, 989e12
UTIL, LIVE, MAX_LEN, PRICE, BUDGET = 0.9, 2048, 32768, 2.0, 8192

ATTN_PARAMS = 2 * D * HEADS * HEAD_DIM + 2 * D * KV_HEADS * HEAD_DIM  # W_q, W_o; W_k, W_v
PARAMS = LAYERS * (ATTN_PARAMS + 3 * D * D_FF + 2 * D) + 2 * VOCAB * D + D  # norms, untied embedding and head
WEIGHTS = 2 * PARAMS
ACT = 2 * BUDGET * (D + (HEADS + 2 * KV_HEADS) * HEAD_DIM + 2 * D_FF)
POOL = int(UTIL * HBM) - WEIGHTS - ACT


def kv_tok(kv_heads, nbytes):
    return 2 * LAYERS * kv_heads * HEAD_DIM * nbytes


def step(batch, live, tok_bytes):
    nbytes = WEIGHTS + tok_bytes * (batch * live + batch)
    flops = 2 * (PARAMS - VOCAB * D) * batch + 2 * LAYERS * 2 * HEADS * HEAD_DIM * batch * live
    return max(nbytes / BW, flops / PEAK)


CASES = {  # key: (row name, bytes a token, tokens held, tokens live)
    "base": ("paged, GQA-8, bf16 (baseline)", kv_tok(8, 2), LIVE, LIVE),
    "res": ("reserved to max_len 32K", kv_tok(8, 2), MAX_LEN, LIVE),
    "mha": ("MHA variant (32 KV heads)", kv_tok(32, 2), LIVE, LIVE),
    "resmha": ("reserved 32K and MHA", kv_tok(32, 2), MAX_LEN, LIVE),
    "long": ("long answers: live 8K", kv_tok(8, 2), 4 * LIVE, 4 * LIVE),
    "fp8": ("paged, GQA-8, FP8 cache", kv_tok(8, 1), LIVE, LIVE),
}


def row(key):
    _, tok, held, live = CASES[key]
    batch = POOL // (tok * held)
    seconds = step(batch, live, tok)
    return batch, seconds, 1e6 * PRICE / 3600 * seconds / batch


BASE_COST = row("base")[2]


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_preconditions():
    assert PARAMS == 8_030_261_248  # Llama 3 8B's published size
    assert kv_tok(8, 2) == 131_072 and kv_tok(32, 2) == 524_288 and kv_tok(8, 1) == 65_536


def test_assumptions_are_the_cells():
    source = "".join(chapter_outputs._code_cell(NB, MARKER)["source"])
    for line in ("KC_UTIL = 0.9", "KC_LIVE, KC_MAX_LEN = 2_048, 32_768", "KC_USD_HOUR = 2.0", "KC_BUDGET = 8_192",
                 "with_kv_heads(kc_cfg.num_heads)", '"fp8"'):
        assert line in source, line
    assert f"cache pool {POOL / 1e9:.2f} GB" in TABLE


@pytest.mark.parametrize("key", list(CASES))
def test_rows(key):
    name, tok, _, _ = CASES[key]
    batch, seconds, cost = row(key)
    line = (rf"^{re.escape(name)}\s+{tok:,}\s+{batch}\s+{1e3 * seconds:.2f}ms\s+{batch / seconds:,.0f}"
            rf"\s+{cost:.3f}\s+{cost / BASE_COST:.1f}x$")
    assert re.search(line, TABLE, re.M), (key, TABLE)
    assert glued(f"so_kc_b_{key}") == str(batch)
    assert glued(f"so_kc_cost_{key}") == f"{cost:.3f}"
    assert glued(f"so_kc_x_{key}") == f"{cost / BASE_COST:.1f}"


def test_exact_batches_and_ratios():
    assert [row(k)[0] for k in CASES] == [206, 12, 51, 3, 51, 412]
    assert glued("so_kc_bratio") == "17.2" and glued("so_kc_x_res") == "4.6"  # the follow-up's title
    assert glued("so_kc_x_resmha") == "18.5" and float(glued("so_kc_x_resmha")) > 10  # stacked causes exceed 10x
    assert glued("so_kc_mha_b") == "4.0" and glued("so_kc_fp8_b") == "2.0"
    floor = 1e6 * PRICE / 3600 * LIVE * kv_tok(8, 2) / BW  # the cache-read term alone
    assert glued("so_kc_floor") == f"{floor:.3f}" and floor / BASE_COST > 0.75


def test_static_cache_reads_the_buffer_and_reported_hbm():
    batch = row("res")[0]
    seconds = step(batch, MAX_LEN, kv_tok(8, 2))  # the compiled static cache attends over all 32K slots
    ratio = (1e6 * PRICE / 3600 * seconds / batch) / BASE_COST
    assert glued("so_kc_x_resfull") == f"{ratio:.1f}" == "16.3"
    assert ratio > float(glued("so_kc_x_res")) * 3  # far above the live-token kernel's ratio
    reported = 81_559 * 2**20  # nvidia-smi's MiB total for an H100 80GB
    pool = int(UTIL * reported) - WEIGHTS - ACT
    assert glued("so_kc_hbm_dev") == f"{reported / 1e9:.1f}" and glued("so_kc_pool_dev") == f"{pool / 1e9:.1f}"
    assert glued("so_kc_b_dev") == str(pool // (kv_tok(8, 2) * LIVE)) == "224"


def test_preemption():
    per_token = LAYERS * (ATTN_PARAMS + 3 * D * D_FF)
    flops = 2 * LIVE * per_token + 2 * VOCAB * D + LAYERS * 2 * HEADS * HEAD_DIM * LIVE * (LIVE + 1)
    batch, seconds, _ = row("base")
    assert glued("so_kc_pre_ms") == f"{1e3 * flops / PEAK:.1f}"
    assert glued("so_kc_pre_tok") == f"{flops / PEAK / (seconds / batch):.0f}"


def test_links_citations_and_corrections():
    for ref in ("serving_kv_cache-reserve", "serving_kv_cache-fitting", "deployment_plan-cost", "serving_operations-metrics",
                "serving_operations-kv-byte-seconds", "serving_operations-max-model-len", "prefix_caching-what-breaks",
                "scheduler_design-preemption", "tradeoffs-mean-pool", "serving_operations-hf-cache-classes"):
        assert f"{{ref}}`{ref}`" in TEXT, ref
    for cite in ("kwon2023vllm{Abstract}", "kwon2023vllm{§6.2}", "kwon2023vllm{Fig. 2}", "hfstaticcachefull",
                 "modalgpumem", "vllmmaxnumseqsdefault", "vllmkvusagerename", "vllmoptimization{Preemption}",
                 "vllmpromloggers{vllm/v1/metrics/loggers.py", "vllmmetrics{docs/design/metrics.md, v1 Metrics}",
                 "vllmgpumemutildefault", "nvidiah100{"):
        assert "`" + cite in TEXT, cite
    for metric in ("vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
                   "vllm:num_preemptions_total", "vllm:prefix_cache_hits_total", "vllm:request_generation_tokens"):
        assert metric in TEXT, metric
    assert "2–4x" in TEXT and "overstate the paper" not in TEXT  # §6.2's per-baseline range contains 5-6x
    assert "1.7–2.7x" in TEXT and "2.7–8x" in TEXT and "up to 22x" in TEXT
    assert "reads only its live tokens" not in TEXT and "if its kernels read only the live" in TEXT
    assert "1,024" in TEXT and "0.92" in TEXT and "prompt} + \\text{gen}/2" in TEXT
    assert "12 requests instead of 206" in TEXT


def test_cards():
    assert "```{admonition} In the interview" in TEXT
    assert TEXT.count(":class: dropdown followup") == 2
    cards = [c for c in TEXT.split(":::{admonition}")[1:] if ":class: dropdown\n" in c]
    assert [c.split("\n", 1)[0][:4] for c in cards] == [" [E]", " [M]", " [H]"]
    for card in TEXT.split(":::{admonition}")[1:]:
        answer = card.split("**Strong answer.**", 1)[1].split("**Listening for.**", 1)[0]
        rubric = card.split("**Listening for.**", 1)[1].split("**Trap.**", 1)[0]
        assert rubric_problems(answer, rubric) == []
